"""Per-cell marks on the terrain (render/sources/cell_marks.py): render draws mark slots with the
looks the caller gives; what a slot means is the caller's (the workbench's overlays name them)."""

from __future__ import annotations

import numpy as np
import pytest


def test_the_workbench_overlays_name_the_slots_render_draws():
    from wowgrass.render.sources.cell_marks import SHOW_CHUNK_GRID, SHOW_PALETTE, SHOW_TILE_GRID, show_mark
    from wowgrass.workbench import overlays as ov

    names = [n for n, _ in ov.MARKS]
    assert names == ["unassigned", "stale", "excluded", "holes"]
    assert [ov.CELL_UNASSIGNED, ov.CELL_STALE, ov.CELL_EXCLUDED, ov.CELL_HOLE] == [1, 2, 4, 8]
    assert ov.OVERLAY_BITS == {"sets": SHOW_PALETTE, "unassigned": show_mark(0), "stale": show_mark(1),
                               "excluded": show_mark(2), "holes": show_mark(3), "chunks": SHOW_CHUNK_GRID,
                               "tiles": SHOW_TILE_GRID}
    # every overlay the panel lists has its bit (the rules overlay is drawn as the sets' palette)
    assert {ov.DRAWN_AS.get(n, n) for n, _k, _l in ov.OVERLAYS} == set(ov.OVERLAY_BITS)
    assert ov.DRAWN_AS == {"rules": "sets"}
    assert len(set(ov.OVERLAY_BITS.values())) == len(ov.OVERLAY_BITS)


def test_a_mark_look_and_the_slots_are_checked():
    from wowgrass.render.sources.cell_marks import MARK_SLOTS, CellMarks, MarkLook, show_mark

    with pytest.raises(ValueError, match="style"):
        MarkLook((1.0, 0.0, 0.0), 0.5, "stripes")
    with pytest.raises(ValueError, match="slot"):
        show_mark(MARK_SLOTS)
    cells = CellMarks(None)
    with pytest.raises(ValueError, match="slots"):
        cells.look(marks=[MarkLook((1.0, 0.0, 0.0), 0.5)] * (MARK_SLOTS + 1))
    with pytest.raises(ValueError, match="palette"):
        cells.look(palette=[(1.0, 0.0, 0.0)])
    cells.look(marks=[None, MarkLook((1.0, 0.0, 0.0), 0.5)])
    assert cells.marks[1].colour == (1.0, 0.0, 0.0) and cells.marks[0] is None and len(cells.marks) == MARK_SLOTS
    with pytest.raises(ValueError, match="shape"):
        cells.set((0, 0), np.zeros((64, 64, 4), np.uint8))


@pytest.mark.gl
def test_render_draws_a_slot_with_the_look_given_and_nothing_without_one(egl):
    """A slot shows (its bit in the mask) where the cells carry its bit, in the colour the caller
    gave; a slot with no look, or cells carrying another slot's bit, leave the ground as it was."""
    from wowgrass.render.app import (CameraOptions, OutputMode, OutputOptions, ViewOptions, open_scene, open_source,
                                     open_target, open_viewer)
    from wowgrass.render.sources.cell_marks import CELLS, MarkLook, show_mark

    opts = ViewOptions(camera=CameraOptions((470.0, 470.0, 90.0), (520.0, 520.0, 20.0)), output=OutputOptions(size=(96, 64), warm_up=False))
    data, src = open_source(opts.data)
    target, _ = open_target(opts.output, OutputMode(False, None), lambda s: None, "test")
    scene = open_scene(target, src, opts.look, lambda s: None)
    try:
        viewer = open_viewer(target, scene, src, opts, OutputMode(False, None))
        for _ in range(3):
            scene.update(viewer.camera.position)
            viewer.render_frame(0.0)
        cells = scene.terrain.cells

        def picture(bits, mask, marks):
            for key in scene.tiles:
                img = np.zeros((CELLS, CELLS, 4), np.uint8)
                img[..., 1] = bits
                cells.set(key, img)
            cells.look(marks=marks)
            cells.mask = mask
            viewer.render_frame(0.0)
            return viewer.read_rgba()[..., :3].astype(np.int64)

        plain = picture(0, 0, [None] * 4)
        ground = np.abs(plain - plain[0, 0]).sum(axis=-1) > 30  # not the sky of the top row
        assert ground.mean() > 0.3
        red = MarkLook((1.0, 0.0, 0.0), 1.0)
        marked = picture(1 << 2, show_mark(2), [None, None, red])
        assert (marked[ground][:, 0] > 2 * marked[ground][:, 1:].max(axis=1)).mean() > 0.9  # red ground
        assert np.array_equal(picture(1 << 2, show_mark(2), [None] * 4), plain)  # no look: not drawn
        assert np.array_equal(picture(1 << 1, show_mark(2), [None, None, red]), plain)  # another slot's bit
        assert np.array_equal(picture(1 << 2, show_mark(1), [None, None, red]), plain)  # slot not shown
        viewer.release()
    finally:
        scene.release()
        target.release()
        data.close()
