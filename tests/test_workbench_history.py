"""The undo stack (workbench/history.py) as a data structure: the limit, forgetting what a reload
made stale, merging a stroke's steps (tiles and tables), patches chained byte by byte."""

from __future__ import annotations

import numpy as np
import pytest

from wowgrass.workbench.history import History, Step, TilePatch


def patch(old: bytes, new: bytes) -> TilePatch:
    return TilePatch.between(old, new, {"f": old}, {"f": new})


def test_the_limit_drops_the_oldest_and_a_new_step_the_redo_stack():
    h = History(limit=3)
    for k in range(5):
        h.push(Step(f"s{k}"))
    assert h.labels == ["s2", "s3", "s4"] and h.done_count == 3
    assert h.undo().label == "s4" and h.redo_labels == ["s4"] and h.can_redo
    h.push(Step("new"))
    assert not h.can_redo and h.labels == ["s2", "s3", "new"]
    assert History().limit == 1000
    for k in range(1001):
        h2 = h2 if k else History()
        h2.push(Step(str(k)))
    assert h2.done_count == 1000 and h2.labels[0] == "1"


def test_forget_drops_the_steps_touching_a_tile_or_the_tables_and_all_before():
    a, b = (1, 1), (2, 1)
    p = patch(b"ab", b"ax")
    h = History()
    h.push(Step("a1", tiles={a: p}))
    h.push(Step("tables", tables=("t0", "t1")))
    h.push(Step("b1", tiles={b: p}))
    h.push(Step("a2", tiles={a: p}))
    h.push(Step("b2", tiles={b: p}))
    h.undo()
    h.forget(b"nothing")                               # no step touches it: only the redo stack goes
    assert h.labels == ["a1", "tables", "b1", "a2"] and not h.can_redo
    h.forget(b)                                        # b's last step (b2 was undone) and all before it
    assert h.labels == ["a2"]
    h = History()
    for s in (Step("a1", tiles={a: p}), Step("tables", tables=("t0", "t1")), Step("b1", tiles={b: p})):
        h.push(s)
    h.forget()                                         # neither a tile nor the tables: nothing
    assert h.labels == ["a1", "tables", "b1"]
    h.forget(tables=True)
    assert h.labels == ["b1"]
    h.forget(a)
    assert h.labels == ["b1"]


def test_merge_last_chains_tiles_and_tables_under_the_first_label():
    a, b = (1, 1), (2, 1)
    h = History()
    h.push(Step("before"))
    h.push(Step("dab 1", tiles={a: patch(b"aaaa", b"abaa")}, tables=None))
    h.push(Step("dab 2", tiles={a: patch(b"abaa", b"abca"), b: patch(b"zz", b"zy")}, tables=("t0", "t1")))
    h.push(Step("dab 3", tiles={a: patch(b"abca", b"aaca")}, tables=("t1", "t2")))
    h.merge_last(0)
    h.merge_last(9)                                    # more than there are: nothing
    assert h.labels == ["before", "dab 1", "dab 2", "dab 3"]
    h.merge_last(3)
    assert h.labels == ["before", "dab 1"]
    step = h.undo()
    assert step.tables == ("t0", "t2")                 # before the first, after the last
    assert step.tiles[a].apply(b"aaca", 0) == b"aaaa" and step.tiles[a].apply(b"aaaa", 1) == b"aaca"
    assert step.tiles[a].at.tolist() == [2]            # byte 1 went b and back: no change left
    assert step.tiles[b].apply(b"zy", 0) == b"zz"
    h.redo()
    h.push(Step("x", tables=("t2", "t3")))
    h.push(Step("y"))
    h.merge_last(2, label="stroke")
    assert h.labels[-1] == "stroke" and h.undo().tables == ("t2", "t3")
    h = History()
    h.push(Step("one", tiles={a: patch(b"a", b"b")}))
    h.merge_last(1)
    assert h.labels == ["one"]
    assert np.array_equal(h.undo().tiles[a].after, [ord("b")])


def test_a_stroke_of_one_step_takes_the_strokes_label():
    a = (1, 1)
    h = History()
    h.push(Step("exclude r=4 at (1.0, 2.0)", tiles={a: patch(b"ab", b"xb")}))
    h.merge_last(1, label="exclude stroke")
    assert h.labels == ["exclude stroke"] and h.done_count == 1
    step = h.undo()
    assert step.tiles[a].apply(b"xb", 0) == b"ab" and step.tiles[a].at.tolist() == [0]


def test_a_patch_between_tiles_of_two_lengths_is_refused():
    with pytest.raises(ValueError) as err:
        TilePatch.between(b"ab", b"abc", {}, {})
    assert str(err.value) == "a tile edit never changes the tile's length"


def test_a_chained_field_recorded_before_only_stays_as_it_was():
    f = np.arange(3)
    only_before = TilePatch(np.array([0]), np.array([1], np.uint8), np.array([2], np.uint8), {"f": f}, {})
    both = TilePatch(np.array([1]), np.array([3], np.uint8), np.array([4], np.uint8), {"g": f}, {"g": f + 1})
    chained = TilePatch.chain([only_before, both])
    assert chained.fields(0).keys() == chained.fields(1).keys() == {"f", "g"}
    assert chained.fields(1)["f"] is f and np.array_equal(chained.fields(1)["g"], f + 1)
