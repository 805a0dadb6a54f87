"""Placement rows (``bundle export``, ``bake --export``): the streamed text against an independent
formatting of the same instances, the bulk float formatter against numpy's, flat memory, atomic writes."""

from __future__ import annotations

import csv
import io
import json
import math
import tracemalloc

import numpy as np
import pytest
from click.testing import CliRunner
from wowgrass.cli.main import cli

from wowgrass.errors import OutputError
from wowgrass.export import placements as P
from wowgrass.grass.bundle import ModelInfo, read_bundle, write_bundle


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def reference_rows(path, fmt: str) -> list[str]:
    """The rows as the format says, one instance at a time with Python's and numpy's own printing."""
    out = []
    with read_bundle(path) as b:
        col, row = b.tile
        for m in b.models:
            name = m.path
            if fmt == "csv":
                buf = io.StringIO()
                csv.writer(buf, lineterminator="").writerow([name])
                name = buf.getvalue()
            else:
                name = json.dumps(name)
            for rec in m.instances.tolist():
                pos, yaw, scale = rec
                x, y, z = (str(np.float32(v)) for v in pos)
                yaw_deg = round(math.degrees(float(np.float32(yaw * (2 * math.pi / 65536)))), 4)
                scale_f = str(np.float32(scale / 4096))
                south = 17066.666666666666 - row * 533.3333333333334 - float(np.float32(pos[0]))
                east = 17066.666666666666 - col * 533.3333333333334 - float(np.float32(pos[1]))
                fy = min(max(math.floor(south / (533.3333333333334 / 128)), 0), 127)
                fx = min(max(math.floor(east / (533.3333333333334 / 128)), 0), 127)
                chunk, cell = (fy // 8) * 16 + fx // 8, (fy % 8) * 8 + fx % 8
                out.append(",".join([name, x, y, z, repr(yaw_deg), scale_f, str(col), str(row), str(chunk),
                                     str(cell)]))
    return out


@pytest.fixture()
def bundles(tmp_path):
    """Two small bundles: odd model names (comma, quote, non-ASCII), positions of every sign and size."""
    rng = np.random.default_rng(7)
    paths = []
    models = [ModelInfo('World\\Detail\\Gra,"ss".m2'), ModelInfo("World\\Detail\\Blüme.m2"), ModelInfo("a.m2")]
    for t, (col, row) in enumerate([(31, 32), (32, 32)]):
        n = 3000
        x0, y0 = 17066.666 - row * 533.333, 17066.666 - col * 533.333
        pos = np.stack([x0 - rng.random(n) * 533.3, y0 - rng.random(n) * 533.3, rng.normal(0, 300, n)], 1)
        pos[:8, 2] = [0.0, -0.0, 1e-5, -2.5e-4, 123456.7, 1.0, 0.5, 2.0 ** -3]  # tiny (scientific), exact, zero
        yaw = rng.random(n) * 7 - 0.3
        yaw[:4] = [0.0, math.pi, 2 * math.pi - 1e-9, 1e-4]
        scale = rng.random(n) * 3
        scale[:3] = [0.0, 1.0, 15.9]
        paths.append(write_bundle(tmp_path / f"t{t}.wgb", model_index=rng.integers(0, 3, n), pos=pos, yaw=yaw,
                                  scale=scale, models=models, provenance={"tile": [col, row]}, tile=(col, row)))
    return paths


def test_csv_rows_are_the_reference_formatting(bundles):
    text = P.rows_text(bundles, "csv", block=1000).decode()  # blocks smaller than a model's instances
    lines = text.split("\n")
    assert lines[0] == ",".join(P.COLUMNS) and lines[-1] == ""
    want = [r for b in bundles for r in reference_rows(b, "csv")]
    assert lines[1:-1] == want
    parsed = list(csv.reader(io.StringIO(text)))
    assert parsed[1][0] in ('World\\Detail\\Gra,"ss".m2', "World\\Detail\\Blüme.m2", "a.m2")
    assert len(parsed) == 6001


def test_json_rows_are_valid_json_with_the_same_rows(bundles):
    text = P.rows_text(bundles, "json", block=777)
    doc = json.loads(text)
    assert doc["files"] == [str(b) for b in bundles] and doc["columns"] == list(P.COLUMNS)
    assert doc["row_count"] == len(doc["rows"]) == 6000
    want = [json.loads("[" + r + "]") for b in bundles for r in reference_rows(b, "json")]
    assert doc["rows"] == want
    # one row a line, as before: header line, rows joined by ",\n", footer
    lines = text.decode().split("\n")
    assert lines[0].endswith('"rows":[') and lines[-2] == "]}" and len(lines) == 6003
    assert json.loads(P.rows_text([], "json")) == {"files": [], "columns": list(P.COLUMNS), "row_count": 0, "rows": []}


def test_float32_text_is_numpys_for_every_kind_of_value():
    rng = np.random.default_rng(1)
    bits = rng.integers(0, 2 ** 32, 30_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    world = (rng.random(30_000) * 34133 - 17066).astype(np.float32)
    step = np.arange(np.float32(1024).view(np.uint32), np.float32(1026).view(np.uint32), dtype=np.uint32)
    two = np.ldexp(np.float32(1), np.arange(-14, 22)).astype(np.float32)
    edges = np.concatenate([two, np.nextafter(two, np.float32(0)), np.nextafter(two, np.float32(np.inf)),
                            [0.0, -0.0, np.nan, np.inf, -np.inf, 1e-4, 9.99999e-5, 999999.94, 1e6]]).astype(np.float32)
    with np.errstate(invalid="ignore"):
        for v in (bits, world, step.view(np.float32), edges, -edges):
            got = P.float32_slots(v)
            text = [bytes(r[r != 0]) for r in got]
            assert text == v.astype("S").tolist()


def test_memory_stays_flat_whatever_the_rows(tmp_path):
    """Peak Python allocations while streaming 6x the rows grow by far less than 8x (blocks, not the whole)."""
    rng = np.random.default_rng(3)
    path = write_bundle(tmp_path / "big.wgb", model_index=np.zeros(40_000, int),
                        pos=np.stack([rng.random(40_000) * 500 + 100] * 3, 1), yaw=rng.random(40_000),
                        scale=np.ones(40_000), models=[ModelInfo("a.m2")], provenance={"tile": [32, 32]},
                        tile=(32, 32))

    def peak(files):
        tracemalloc.start()
        size = sum(len(b) for b in P.row_blocks(files, "csv", block=4096))
        top = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return size, top

    peak([path])  # the formatting tables, built once
    s1, p1 = peak([path])
    s8, p8 = peak([path] * 6)
    assert s8 == 6 * s1 - 5 * len(",".join(P.COLUMNS) + "\n") and p8 < 1.2 * p1 and p8 < s8 / 3


def test_export_is_atomic_when_a_block_fails(bundles, tmp_path, monkeypatch):
    out = tmp_path / "rows.csv"
    out.write_text("old\n")
    real = P.tile_row_blocks

    def failing(*args, **kwargs):
        yield from real(*args, **kwargs)
        raise OutputError(out, 28)  # ENOSPC

    monkeypatch.setattr(P, "tile_row_blocks", failing)
    res = run("bundle", "export", *bundles, "-o", out)
    assert res.exit_code == 2 and "cannot write" in res.stderr
    assert out.read_text() == "old\n" and [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    monkeypatch.setattr(P, "tile_row_blocks", real)
    res = run("bundle", "export", *bundles, "-o", out)
    assert res.exit_code == 0 and "6,000 rows, CSV" in res.stderr
    assert out.read_bytes() == P.rows_text(bundles, "csv")
    res = run("bundle", "export", *bundles, "--json")  # stdout
    assert res.exit_code == 0 and json.loads(res.stdout)["row_count"] == 6000


def test_yaw_and_scale_tables_are_numpys_text_for_all_16_bit_values():
    from wowgrass.grass.bundle import unpack_instances

    every = np.zeros(65536, np.dtype([("pos", "<f4", 3), ("yaw", "<u2"), ("scale", "<u2")]))
    every["yaw"] = every["scale"] = np.arange(65536)
    _, yaw, scale = unpack_instances(every)
    yaw_t, scale_t = P._u16_tables()
    assert [bytes(r[r != 0]) for r in yaw_t] == np.round(np.degrees(yaw.astype(np.float64)), 4).astype("S").tolist()
    assert [bytes(r[r != 0]) for r in scale_t] == scale.astype("S").tolist()
