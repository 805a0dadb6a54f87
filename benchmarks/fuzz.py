"""Mutation fuzzer for every format wowgrass reads and for its command line.

    python benchmarks/fuzz.py --cases 100000 --seed 1 --jobs 16 --out DIR

The same mutation kinds for every format (bit flips; integers set to 0, 1, 0xFFFFFFFF,
0x7FFFFFFF, 0x80000000, small negatives, the file size, inf/NaN; size fields inflated;
truncation; spliced, inserted and deleted regions), applied to small valid files the sample world
and the writers make. A case is fully determined by ``(seed, format, case index)``.

Cases run in long-lived worker processes (fork) under an address-space limit (RLIMIT_AS); the
parent is a watchdog: a worker that stays on one case past ``--timeout`` is killed, the case is a
hang, and a fresh worker takes over the rest. Each case ends as one of

* parsed: the input was accepted and every accessor ran;
* clean: a wowgrass error (FormatError and friends) was raised; ``no offset`` counts the
  FormatErrors that do not say where in the file the problem is;
* escape: any other exception (or a dead worker): a bug;
* memory: MemoryError or a worker growing past the memory budget;
* hang: the watchdog fired.

The CLI target runs real ``wowgrass`` commands on mutated files in forked children (the process
exits with its own status; stderr is captured): the pass condition is exit 0 or 2 and no
``Traceback`` on stderr.

Every escape and memory case is minimised (truncation and zeroing that keep the same failure, under
the same memory limit) and written, gzipped, to ``--crashes`` (default: OUT/crashes); hangs are
listed by case number. tests/fixtures/crashes/ holds the ones found so far, replayed by
tests/test_fuzz.py. ``--out`` gets ``fuzz.json`` with the table.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import math
import os
import random
import resource
import signal
import struct
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from pathlib import Path
from typing import Callable

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one thread per worker; fewer reserved stacks

import numpy as np  # noqa: E402

from wowgrass.errors import FormatError, WowgrassError  # noqa: E402


def _cli_from_source_checkout() -> None:
    """Map the checkout's cli/ folder to ``wowgrass.cli`` when wowgrass is not installed (a bare
    PYTHONPATH run, e.g. on the GPU machine), as the editable install does."""
    import importlib.util

    cli_dir = Path(__file__).resolve().parents[1] / "cli"
    if importlib.util.find_spec("wowgrass") is None or "wowgrass.cli" in sys.modules:
        return
    try:
        if importlib.util.find_spec("wowgrass.cli") is not None:
            return
    except ModuleNotFoundError:
        pass
    spec = importlib.util.spec_from_file_location("wowgrass.cli", cli_dir / "__init__.py",
                                                  submodule_search_locations=[str(cli_dir)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["wowgrass.cli"] = module
    spec.loader.exec_module(module)


_cli_from_source_checkout()

# ----------------------------------------------------------------------------------- mutations
INTERESTING_U32 = (0, 1, 2, 0x7F, 0x80, 0xFF, 0x100, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
                   0xFFFFFFFE, 0xFFFFFFF0, 0x40000000, 0x00FFFFFF)
FLOAT_BITS = tuple(struct.unpack("<I", struct.pack("<f", v))[0]
                   for v in (math.inf, -math.inf, math.nan, 3.0e38, -3.0e38, 1e-40, 65536.0))


def _set_u32(b: bytearray, rng: random.Random) -> None:
    off = _int_offset(b, rng, 4)
    if off is None:
        return
    pick = rng.random()
    if pick < 0.45:
        v = rng.choice(INTERESTING_U32)
    elif pick < 0.6:
        v = (-rng.randint(1, 16)) & 0xFFFFFFFF
    elif pick < 0.7:
        v = len(b) + rng.randint(-8, 8)
    elif pick < 0.85:
        v = rng.choice(FLOAT_BITS)
    else:
        v = rng.getrandbits(32)
    struct.pack_into("<I", b, off, v & 0xFFFFFFFF)


def _set_u16(b: bytearray, rng: random.Random) -> None:
    off = _int_offset(b, rng, 2)
    if off is not None:
        struct.pack_into("<H", b, off, rng.choice((0, 1, 0x7FFF, 0x8000, 0xFFFF, rng.getrandbits(16))))


def _inflate(b: bytearray, rng: random.Random) -> None:
    """Scale an existing integer (most likely a size, count or offset) up."""
    off = _int_offset(b, rng, 4)
    if off is None:
        return
    (v,) = struct.unpack_from("<I", b, off)
    v = v * rng.choice((2, 3, 16, 256, 65536)) + rng.randint(0, 64) if rng.random() < 0.7 else v + rng.randint(1, 4096)
    struct.pack_into("<I", b, off, v & 0xFFFFFFFF)


_HOT: list[int] = []   # structure starts of the input being mutated (see Target.hot)


def _int_offset(b: bytearray, rng: random.Random, size: int) -> int | None:
    if len(b) < size:
        return None
    # headers hold most sizes and offsets: bias towards the first bytes and the starts of inner
    # structures (chunk headers), stay 4-aligned most times
    hi = len(b) - size
    pick = rng.random()
    if pick < 0.4:
        off = rng.randint(0, min(hi, 512))
    elif pick < 0.75 and _HOT:
        off = min(hi, rng.choice(_HOT) + rng.randint(0, 160))
    else:
        off = rng.randint(0, hi)
    if rng.random() < 0.8:
        off -= off % size
    return off


def _flip(b: bytearray, rng: random.Random) -> None:
    for _ in range(rng.randint(1, 8)):
        if b:
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)


def _random_bytes(b: bytearray, rng: random.Random) -> None:
    if b:
        i = rng.randrange(len(b))
        n = rng.randint(1, 32)
        b[i:i + n] = bytes(rng.getrandbits(8) for _ in range(min(n, len(b) - i)))


def _truncate(b: bytearray, rng: random.Random) -> None:
    if b:
        del b[rng.randint(0, len(b) - 1):]


def _splice(b: bytearray, rng: random.Random) -> None:
    """Copy one region of the file over another (a plausible but misplaced structure)."""
    if len(b) < 8:
        return
    n = rng.randint(1, min(len(b) // 2, 4096))
    src = rng.randint(0, len(b) - n)
    dst = rng.randint(0, len(b) - n)
    b[dst:dst + n] = b[src:src + n]


def _insert(b: bytearray, rng: random.Random) -> None:
    i = rng.randint(0, len(b))
    n = rng.choice((1, 2, 4, 8, rng.randint(1, 512)))
    b[i:i] = bytes(n) if rng.random() < 0.5 else bytes(rng.getrandbits(8) for _ in range(n))


def _delete(b: bytearray, rng: random.Random) -> None:
    if b:
        i = rng.randrange(len(b))
        del b[i:i + rng.choice((1, 2, 4, 8, rng.randint(1, 512)))]


def _extend(b: bytearray, rng: random.Random) -> None:
    b += bytes(rng.choice((1, 4, 16, 4096)))


MUTATIONS: tuple[tuple[str, Callable, float], ...] = (
    ("u32", _set_u32, 4.0), ("u16", _set_u16, 1.0), ("inflate", _inflate, 2.0), ("flip", _flip, 2.0),
    ("random", _random_bytes, 1.0), ("truncate", _truncate, 1.0), ("splice", _splice, 1.0),
    ("insert", _insert, 0.5), ("delete", _delete, 0.5), ("extend", _extend, 0.3),
)
_MUT_WEIGHTS = [w for _, _, w in MUTATIONS]


def mutate(data: bytes, rng: random.Random, hot=()) -> tuple[bytes, list[str]]:
    b = bytearray(data)
    _HOT[:] = hot
    kinds = []
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3))):
        name, fn, _ = rng.choices(MUTATIONS, weights=_MUT_WEIGHTS)[0]
        fn(b, rng)
        kinds.append(name)
    return bytes(b), kinds


# ------------------------------------------------------------------------------------- targets
@dataclass
class Target:
    """A format: valid inputs to start from and a function that parses and touches everything.

    An input is a tuple of byte strings (M2 + skin); ``parse(parts, workdir)`` gets them mutated.
    """

    name: str
    bases: Callable[[], list[tuple[str, tuple[bytes, ...]]]]   # [(label, parts)]
    parse: Callable[[tuple[bytes, ...], Path], None] | None   # None: the CLI (see _cli_case)
    fix_up: Callable[[list[bytes], random.Random], None] | None = None
    _cache: list = field(default_factory=list, repr=False)
    _hot: dict = field(default_factory=dict, repr=False)

    def inputs(self):
        if not self._cache:
            self._cache.extend(self.bases())
        return self._cache

    def hot(self, data: bytes) -> list[int]:
        """Offsets of the IFF chunk headers in ``data`` (ADT/WDT; other formats find few)."""
        key = hashlib.sha1(data).digest()
        if key not in self._hot:
            self._hot[key] = _chunk_starts(data)
        return self._hot[key]


def _chunk_starts(data: bytes) -> list[int]:
    """Every offset where a little-endian IFF chunk (``REVM``, ``KNCM``, ``TVCM``...) starts."""
    import re

    return [m.start() for m in re.finditer(rb"[A-Z0-9]{3}M", data)][:20000]


def _sample(build: str) -> dict[str, bytes]:
    from wowgrass.samples import sample_world as world

    flat: dict[str, bytes] = {}
    for files in world.world_files(build, tiles=(1, 1)).values():
        flat.update(files)
    return flat


_SAMPLES: dict[str, dict[str, bytes]] = {}
SKIPPED: list[str] = []   # bases left out on this machine, reported in fuzz.json


def sample(build: str) -> dict[str, bytes]:
    if build not in _SAMPLES:
        _SAMPLES[build] = _sample(build)
    return _SAMPLES[build]


def _pick(files: dict[str, bytes], suffix: str) -> list[tuple[str, bytes]]:
    return sorted((p, d) for p, d in files.items() if p.lower().endswith(suffix))


# -- MPQ
def _mpq_bases():
    from wowgrass.formats.mpq import write_mpq

    payload = {"fixture.txt": b"fixture-text\n" * 40, "nested\\deep.bin": bytes(range(256)) * 24,
               "empty.txt": b""}
    out = []
    # PKWARE needs the dclimplode binding (built from source where no wheel fits): without it the
    # PKWARE bases are left out and SKIPPED says so
    from wowgrass.formats.mpq import dcl_binding

    pkware = dcl_binding() is not None
    if not pkware:
        SKIPPED.append("mpq: PKWARE bases (dclimplode is not installed)")
    for version in (0, 1):
        for comp in ("zlib", "bzip2", "pkware", "lzma", None):
            if comp == "pkware" and not pkware:
                continue
            out.append((f"v{version + 1}-{comp}", (write_mpq(payload, format_version=version, compression=comp,
                                                            sector_shift=1),)))
    out.append(("v1-encrypted-crc", (write_mpq(payload, compression="zlib", encrypt=True, fix_key=True,
                                               sector_crc=True, sector_shift=1),)))
    out.append(("v1-single-unit", (write_mpq(payload, compression="zlib", single_unit=True),)))
    return out


def _mpq_parse(parts, workdir):
    from wowgrass.formats.mpq import MpqArchive

    a = MpqArchive.from_bytes(parts[0])
    a.names()
    for e in a.entries()[:12]:
        try:
            a.read_entry(e)
        except WowgrassError:
            pass       # one bad file must not hide the others: read each
    for n in a.names()[:12]:
        try:
            a.read(n)
        except WowgrassError:
            pass


# -- DBC
def _dbc_bases():
    from wowgrass.samples import tables

    return [(f"{t}-{b}", (fn(b),)) for b in ("1.12", "3.3.5")
            for t, fn in (("texture", tables.ground_effect_texture), ("doodad", tables.ground_effect_doodad))]


def _dbc_parse(parts, workdir):
    from wowgrass.formats import dbc

    for name in ("GroundEffectTexture.dbc", "GroundEffectDoodad.dbc"):
        for strict in (True, False):
            try:
                t, _ = dbc.read_table(parts[0], name, strict=strict)
            except WowgrassError:
                continue
            t.ids()
            t.column_names()
            t.columns_flat()
    raw = dbc.DbcFile.from_bytes(parts[0], "x.dbc", strict=False)
    raw.ids()
    raw.column_names()
    raw.columns_flat()


# -- WDT
def _wdt_bases():
    from wowgrass.formats.wdt import WdtFile, write_wdt

    main = np.zeros((64, 64), bool)
    main[30:34, 29:31] = True
    return [("sample", (_pick(sample("3.3.5"), ".wdt")[0][1],)), ("flags", (write_wdt(WdtFile(flags=0x84, main=main)),))]


def _wdt_parse(parts, workdir):
    from wowgrass.formats.wdt import WdtFile

    w = WdtFile.from_bytes(parts[0], "x.wdt")
    w.tiles()
    w.big_alpha


# -- WDL
def _wdl_bases():
    from wowgrass.formats.wdl import WdlFile, write_wdl

    rng = np.random.default_rng(26)
    w = WdlFile([(30, 31), (31, 31), (5, 60)], rng.integers(-500, 900, (3, 17, 17)), rng.integers(-500, 900, (3, 16, 16)),
                rng.integers(0, 1 << 16, (3, 16)), extra_chunks=[(b"MWMO", b"x.wmo\0"), (b"MWID", b"\0" * 4), (b"MODF", b"")])
    return [(f"sample-{b}", (_pick(sample(b), ".wdl")[0][1],)) for b in ("3.3.5", "1.12")] + [
        ("objects", (write_wdl(w),))]


def _wdl_parse(parts, workdir):
    from wowgrass.formats.wdl import WdlFile

    w = WdlFile.from_bytes(parts[0], "x.wdl")
    w.hole_chunks()
    w.present.sum()
    for c, r in w.tiles[:4]:
        w.index(int(c), int(r))


# -- ADT
def _adt_bases():
    return [(f"sample-{b}", (_pick(sample(b), ".adt")[0][1],)) for b in ("3.3.5", "1.12")]


def _adt_parse(parts, workdir):
    from wowgrass.formats.adt import AdtTile

    data = parts[0]
    try:
        t = AdtTile.from_bytes(data, "x.adt", big_alpha=True)
    except WowgrassError:
        t = AdtTile.from_bytes(data, "x.adt", big_alpha=False)
    t.col, t.row
    idx = np.arange(256)
    centres = t.cell_centres()[:, 3, 3]
    t.heights_at(idx, centres[:, 0], centres[:, 1])
    t.fan_normal_z(idx, centres[:, 0], centres[:, 1])
    t.chunk_index_at(centres[:, 0], centres[:, 1])
    t.vertex_positions()
    t.hole_cells()
    from wowgrass.formats.liquid import tile_liquid
    from wowgrass.game.mapobjects import modf_placements

    tile_liquid(t).summary()
    modf_placements(t)
    # (computed_doodad_mapping and write_adt are arithmetic on the validated arrays and cost 2/3 of
    # a case: left to the unit tests)


# -- M2 (+ skin)
def _m2_bases():
    out = []
    for build in ("3.3.5", "1.12"):
        files = sample(build)
        for path, data in _pick(files, ".m2")[:2]:
            skin = files.get(path[:-3] + "00.skin")
            out.append((f"{build}-{path.rsplit(chr(92), 1)[-1]}", (data, skin) if skin else (data,)))
    return out


def _m2_parse(parts, workdir):
    from wowgrass.formats.m2 import M2Model

    skin = parts[1] if len(parts) > 1 else None
    m = M2Model.from_bytes(parts[0], "World\\X\\Model.m2", skin=skin)
    m.info()
    if m.view is not None:
        m.triangles
        m.render_mesh()
        m.to_bytes()


# -- BLP
def _blp_bases():
    from wowgrass.formats.blp import write_blp

    yy, xx = np.mgrid[0:16, 0:16]
    rgba = np.stack([xx * 16, yy * 16, (xx ^ yy) * 16, (xx + yy) * 8], axis=-1).astype(np.uint8)
    out = [(enc, (write_blp(rgba, enc),)) for enc in ("dxt1", "dxt3", "dxt5")]
    out += [(f"palette{d}", (write_blp(rgba, "palette", alpha_depth=d),)) for d in (0, 1, 4, 8)]
    out.append(("raw", (write_blp(rgba, "raw"),)))
    return out


def _blp_parse(parts, workdir):
    from wowgrass.formats.blp import BlpImage

    img = BlpImage.from_bytes(parts[0], "x.blp")
    for level in range(img.mip_count):
        img.mip(level)


# -- liquids (MH2O payloads, MCLQ payloads with their MCNK flags)
def _liquid_bases():
    from wowgrass.formats import liquid as L

    rng = np.random.default_rng(3)
    layers = []
    for k, fmt in enumerate((L.LVF_HEIGHT_DEPTH, L.LVF_HEIGHT_UV, L.LVF_DEPTH, L.LVF_HEIGHT_UV_DEPTH)):
        ex = np.zeros((8, 8), bool)
        ex[k:k + 4, 1:7] = True
        ex[k + 1, 3] = False
        layers.append(L.mh2o_layer(40 + k, (1, 3, 2, 4)[k], (0, 2, 1, 3)[k], 10 + rng.normal(0, 0.3, (9, 9)),
                                   ex, depth=rng.integers(0, 255, (9, 9)), fmt=fmt,
                                   uv=rng.integers(0, 65535, (9, 9, 2))))
    layers.append(L.mh2o_layer(41, 2, 1, 0.0))      # a full ocean chunk: no bitmap, depth only
    mh2o = L.TileLiquid(layers=np.concatenate(layers), source=L.SOURCE_MH2O)
    mh2o.has_attributes[[40, 41]] = True
    mh2o.fishable[40] = 0xFFFF00FF
    out = [("mh2o", (L.write_mh2o(mh2o), b"mh2o"))]
    for flags, kinds in ((0x4, (0,)), (0x8 | 0x10, (1, 2)), (0x20, (3,))):
        lay = np.concatenate([L.mclq_layer(7, k, 20 + rng.normal(0, 0.2, (9, 9)), rng.random((8, 8)) > 0.3,
                                           depth=rng.integers(0, 255, (9, 9))) for k in kinds])
        out.append((f"mclq-{flags:x}", (L.write_mclq(lay), struct.pack("<I", flags))))
    return out


def _liquid_parse(parts, workdir):
    from wowgrass.formats import liquid as L

    meta = parts[1] if len(parts) > 1 else b""
    if meta[:4] == b"mh2o":
        tl = L.read_mh2o(parts[0], "x.adt", 0x400)
        L.write_mh2o(tl) if not (tl.layers["flags"] & L.FORMAT_UNKNOWN).any() else None
    else:
        flags = struct.unpack("<I", meta[:4])[0] if len(meta) >= 4 else 0
        lay = L.read_mclq(parts[0], 7, flags, "x.adt", 0x400)
        tl = L.TileLiquid(layers=lay, source=L.SOURCE_MCLQ)
        L.write_mclq(lay)
    tl.summary()
    tl.cells()
    L.heights_in_use(tl.layers)


# -- WMO (root + groups)
def _wmo_bases():
    from wowgrass.samples import building

    files = building.building_files("3.3.5")
    root = files[building.WMO_PATH]
    groups = tuple(files[building.WMO_PATH[:-4] + f"_{i:03d}.wmo"] for i in range(2))
    return [("sample-house", (root,) + groups)]


def _wmo_parse(parts, workdir):
    from wowgrass.formats import wmo as W

    names = {"x.wmo": parts[0], **{f"x_{i:03d}.wmo": p for i, p in enumerate(parts[1:])}}

    def read(name):
        if name not in names:
            raise FileNotFoundError(name)
        return names[name]

    w = W.load_wmo("x.wmo", read)
    w.info()
    W.write_wmo_root(w.root)
    for i in range(len(w.root.doodad_sets) + 1):
        W.doodad_matrices(w.root, w.root.doodad_set_indices(i))
    for g in w.groups:
        if g is not None:
            W.fixed_vertex_colours(w.root, g)
            W.group_liquid_type(w.root, g)
            W.write_wmo_group(g)


# -- bundle
def _bundle_bases():
    from wowgrass.grass.bundle import ModelInfo, bundle_bytes

    rng = np.random.default_rng(0)
    n = 300
    models = [ModelInfo("World\\NoDXT\\Detail\\ElwGra01.m2", True, (-1, -1, 0), (1, 1, 1), 0, 1),
              ModelInfo("World\\NoDXT\\Detail\\ElwGra02.m2", False)]
    args = dict(model_index=rng.integers(0, 2, n), pos=rng.uniform(0, 533, (n, 3)),
                yaw=rng.uniform(0, 6.28, n), scale=rng.uniform(0.5, 1.5, n), models=models,
                provenance={"tile": [32, 32], "build": "3.3.5", "inputs": {"adt": "ab" * 16}}, tile=(32, 32))
    # a client bake's: the scatter order block and the draw capacity's count
    return [("two-models", (bundle_bytes(**args),)),
            ("client-order", (bundle_bytes(**args, scatter_order=True, capacity_dropped=17),))]


def _bundle_fix(parts: list[bytes], rng: random.Random) -> None:
    """Most cases get a valid checksum again, so the structure behind it is exercised."""
    from wowgrass.grass import bundle

    if rng.random() < 0.75 and len(parts[0]) >= bundle.HEADER_SIZE:
        b = bytearray(parts[0])
        struct.pack_into("<I", b, bundle.CHECKSUM_OFFSET, bundle.file_checksum(b))
        parts[0] = bytes(b)


def _bundle_parse(parts, workdir):
    from wowgrass.grass.bundle import read_bundle

    p = workdir / "case.bundle"
    p.write_bytes(parts[0])
    with read_bundle(p) as b:
        b.instances()
        b.stats()
        json.dumps(b.provenance)
        for m in b.models:
            m.info.to_dict()


# -- grid (.wgc: the camera grid's cache file)
def _grid_bases():
    import tempfile

    import numpy as np

    from wowgrass.grass import bundle as B
    from wowgrass.grass.bake import bake_tile, load_catalog
    from wowgrass.game.data import open_data
    from wowgrass.formats.adt import AdtTile
    from wowgrass.samples import MAP_NAME, sample_data_path

    from wowgrass.grass import grid_tiles as grid
    from wowgrass.grass.bake import map_tiles

    with open_data(sample_data_path()) as data:
        catalog = load_catalog(data=data)
        _tiles, big_alpha = map_tiles(data, MAP_NAME)
        name = next(p for p in data.list("*.adt"))
        raw = data.read(name)
    tile = AdtTile.from_bytes(raw, name, big_alpha=big_alpha)
    with tempfile.TemporaryDirectory() as tmp:
        res = bake_tile(raw, catalog, map_name=MAP_NAME, out=Path(tmp) / "t.wgb", tile=tile, big_alpha=big_alpha)
        with B.read_bundle(res.path) as b:
            grass = {m.path: np.array(m.instances) for m in b.models if len(m.instances)}
    out = [("sample", (grid.grid_tile_bytes(grid.build_grid_tile(tile, grass, provenance={"bundle_key": res.key})),))]
    out.append(("empty", (grid.grid_tile_bytes(grid.build_grid_tile(tile, {}, provenance={"bundle_key": "0" * 64})),)))
    return out


def _grid_parse(parts, workdir):
    from wowgrass.grass import grid_tiles as grid
    p = workdir / "case.wgc"
    p.write_bytes(parts[0])
    t = grid.read_grid_tile(p)
    t.counts
    t.model_totals()
    t.chunk_model_counts()


def _grid_fix(parts: list[bytes], rng: random.Random) -> None:
    """As _bundle_fix: most cases get the grid file's checksum made right again."""
    from wowgrass.grass import grid_tiles

    if rng.random() < 0.75 and len(parts[0]) >= grid_tiles.HEADER_SIZE:
        b = bytearray(parts[0])
        struct.pack_into("<I", b, grid_tiles.HEADER_SIZE - 4, grid_tiles.file_checksum(b))
        parts[0] = bytes(b)


# -- CLI
def _cli_bases():
    out = []
    for target in TARGETS.values():
        if target.name != "cli" and target.name in CLI_COMMANDS:
            out += [(f"{target.name}:{label}", parts) for label, parts in target.inputs()]
    return out


CLI_COMMANDS = {
    "mpq": [["mpq", "info", "{0}"], ["mpq", "ls", "{0}", "--json"], ["mpq", "extract", "{0}", "-o", "{out}"]],
    "dbc": [["dbc", "info", "{0}"], ["dbc", "dump", "{0}"], ["dbc", "show", "{0}", "--id", "1"]],
    "wdt": [["adt", "info", "{0}"]],
    "adt": [["adt", "info", "{0}"], ["adt", "info", "{0}", "--json"]],
    "m2": [["m2", "info", "{0}"], ["m2", "export", "{0}", "-o", "{out}/x.obj"]],
    "blp": [["blp", "info", "{0}"], ["blp", "convert", "{0}", "{out}/x.png"]],
    "bundle": [["bundle", "info", "{0}"]],
    "wmo": [["wmo", "info", "{0}"], ["wmo", "info", "{0}", "--json"], ["wmo", "export", "{0}", "-o", "{out}/x.glb"]],
}
CLI_NAMES = {"mpq": "case.mpq", "dbc": "GroundEffectTexture.dbc", "wdt": "Case.wdt", "adt": "Case_32_32.adt",
             "m2": "Case.m2", "blp": "case.blp", "bundle": "case.bundle",
             "wmo": "case.wmo"}


def run_cli(argv: list[str], timeout: float = 60.0) -> tuple[int, str]:
    """Run ``wowgrass argv`` in a forked child (already-imported modules; its own exit status)."""
    err = tempfile.TemporaryFile()
    pid = os.fork()
    if pid == 0:   # child
        code = 1
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(err.fileno(), 2)
            sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), write_through=True)
            sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", closefd=False), write_through=True)
            from wowgrass.cli.main import cli

            try:
                cli.main(args=argv, prog_name="wowgrass", standalone_mode=True)
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except BaseException:
                traceback.print_exc()      # what the interpreter would print for an uncaught error
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise TimeoutError(f"wowgrass {' '.join(argv)} ran past {timeout} s")
        time.sleep(0.002)
    err.seek(0)
    text = err.read().decode("utf-8", "replace")
    err.close()
    code = os.waitstatus_to_exitcode(status)
    return code, text


class CliEscape(Exception):
    """A command exited with a status other than 0/2, or printed a traceback."""


def _cli_case(label: str, parts: tuple[bytes, ...], workdir: Path) -> int:
    """Run the case's command; its exit status (0 or 2), CliEscape otherwise.
    ``label`` is ``<format>:<base>|<command index>``."""
    fmt = label.split(":", 1)[0]
    command = CLI_COMMANDS[fmt][int(label.rsplit("|", 1)[1])]
    name = CLI_NAMES[fmt]
    src = workdir / name
    src.write_bytes(parts[0])
    if fmt == "m2" and len(parts) > 1:
        (workdir / "Case00.skin").write_bytes(parts[1])
    if fmt == "wmo":
        for i, p in enumerate(parts[1:]):
            (workdir / f"case_{i:03d}.wmo").write_bytes(p)
    out = workdir / "out"
    out.mkdir(exist_ok=True)
    argv = [a.format(str(src), out=str(out)) for a in command]
    code, err = run_cli(argv)
    if code not in (0, 2) or "Traceback" in err:
        last = err.strip().splitlines()[-1] if err.strip() else ""
        raise CliEscape(f"wowgrass {' '.join(argv[:2])}: exit {code}: {last[:300]}")
    return code


TARGETS: dict[str, Target] = {}
for _t in (Target("mpq", _mpq_bases, _mpq_parse), Target("dbc", _dbc_bases, _dbc_parse),
           Target("wdt", _wdt_bases, _wdt_parse), Target("wdl", _wdl_bases, _wdl_parse),
           Target("adt", _adt_bases, _adt_parse),
           Target("m2", _m2_bases, _m2_parse), Target("blp", _blp_bases, _blp_parse),
           Target("bundle", _bundle_bases, _bundle_parse, _bundle_fix), Target("liquid", _liquid_bases, _liquid_parse),
           Target("wmo", _wmo_bases, _wmo_parse), Target("grid", _grid_bases, _grid_parse, _grid_fix),
           Target("cli", _cli_bases, None)):
    TARGETS[_t.name] = _t
FORMATS = tuple(TARGETS)


def make_case(fmt: str, seed: int, index: int) -> tuple[str, tuple[bytes, ...], list[str]]:
    """The inputs of case ``index``: (base label, mutated parts, mutation kinds)."""
    rng = random.Random(f"{seed}:{fmt}:{index}")
    target = TARGETS[fmt]
    label, parts = rng.choice(target.inputs())
    parts = list(parts)
    which = rng.randrange(len(parts))
    parts[which], kinds = mutate(parts[which], rng, target.hot(parts[which]))
    fix = target.fix_up or (TARGETS[label.split(":")[0]].fix_up if fmt == "cli" else None)
    if fix:
        fix(parts, rng)
    if fmt == "cli":
        label += f"|{rng.randrange(len(CLI_COMMANDS[label.split(':', 1)[0]]))}"
    return label, tuple(parts), kinds


# ------------------------------------------------------------------------------------ one case
def classify(exc: BaseException | None) -> tuple[str, str]:
    """(outcome, detail) for the exception a case ended with."""
    if exc is None:
        return "parsed", ""
    if isinstance(exc, MemoryError):
        return "memory", f"MemoryError: {exc}"
    if isinstance(exc, WowgrassError):
        if isinstance(exc, FormatError) and exc.offset is None:
            return "clean-no-offset", f"{type(exc).__name__}: {exc}"
        return "clean", ""
    tb = traceback.extract_tb(exc.__traceback__)
    frames = [f for f in tb if "wowgrass" in f.filename] or tb
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno} {frames[-1].name}" if frames else "?"
    return "escape", f"{type(exc).__name__} at {where}: {str(exc)[:200]}"


def run_parts(fmt: str, label: str, parts, workdir: Path) -> tuple[str, str]:
    """Run one input through its target and classify how it ended."""
    try:
        if fmt == "cli":
            code = _cli_case(label, parts, workdir)
            return ("parsed", "") if code == 0 else ("clean", "")
        else:
            TARGETS[fmt].parse(parts, workdir)
    except BaseException as exc:  # noqa: BLE001 - classifying every ending is the point
        if isinstance(exc, KeyboardInterrupt):
            raise
        return classify(exc)
    return classify(None)


def run_case(fmt: str, seed: int, index: int, workdir: Path) -> tuple[str, str]:
    label, parts, _kinds = make_case(fmt, seed, index)
    return run_parts(fmt, label, parts, workdir)


# ------------------------------------------------------------------------------------- workers
def _vm_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * resource.getpagesize()


def _worker(conn, mem_mb: int, workdir: str) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import warnings

    warnings.simplefilter("ignore")   # numpy casts of garbage floats warn; outcomes are what count
    limit = _vm_bytes() + mem_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    wd = Path(workdir)
    wd.mkdir(parents=True, exist_ok=True)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        fmt, seed, indices = job
        for i in indices:
            try:
                outcome, detail = run_case(fmt, seed, i, wd)
            except Exception as exc:  # noqa: BLE001 - the harness itself failed: say so, go on
                outcome, detail = "escape", f"harness: {type(exc).__name__}: {exc}"
            grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) * 1024
            if outcome in ("parsed", "clean", "clean-no-offset") and grown > mem_mb * 2**20 // 2:
                outcome, detail = "memory", f"peak memory grew by {grown >> 20} MiB"
            conn.send((i, outcome, detail))
            if outcome == "memory":
                return   # a fresh worker: its peak-memory mark starts again


@dataclass
class Stats:
    cases: int = 0
    parsed: int = 0
    clean: int = 0
    no_offset: int = 0
    escapes: int = 0
    hangs: int = 0
    memory: int = 0
    seconds: float = 0.0
    findings: list = field(default_factory=list)   # (index, outcome, detail)
    no_offset_examples: list = field(default_factory=list)

    def add(self, i: int, outcome: str, detail: str) -> None:
        self.cases += 1
        if outcome == "parsed":
            self.parsed += 1
        elif outcome in ("clean", "clean-no-offset"):
            self.clean += 1
            if outcome == "clean-no-offset":
                self.no_offset += 1
                if len(self.no_offset_examples) < 5:
                    self.no_offset_examples.append(detail)
        else:
            counter = {"escape": "escapes", "hang": "hangs", "memory": "memory"}[outcome]
            setattr(self, counter, getattr(self, counter) + 1)
            self.findings.append((i, outcome, detail))

    def row(self) -> dict:
        return {"cases": self.cases, "parsed": self.parsed, "clean": self.clean, "no_offset": self.no_offset,
                "escapes": self.escapes, "hangs": self.hangs, "memory": self.memory,
                "cases_per_s": round(self.cases / self.seconds, 1) if self.seconds else None}


def fuzz_format(fmt: str, seed: int, cases: int, *, jobs: int = 1, start: int = 0, timeout: float = 20.0,
                mem_mb: int = 1024, batch: int = 25, progress: Callable[[int], None] | None = None) -> Stats:
    """Run cases ``start .. start+cases`` of ``fmt`` in ``jobs`` workers with a watchdog."""
    import multiprocessing as mp

    TARGETS[fmt].inputs()          # build the bases once, before forking
    if fmt == "cli":
        for t in TARGETS.values():
            t.inputs()
    ctx = mp.get_context("fork")
    stats = Stats()
    pending = [list(range(s, min(s + batch, start + cases))) for s in range(start, start + cases, batch)]
    pending.reverse()
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None   # case files: memory, not disk
    tmp = tempfile.mkdtemp(prefix=f"wowgrass-fuzz-{fmt}-", dir=shm)
    workers: dict = {}   # conn -> [process, remaining indices, last reply time]
    serial = 0
    t0 = time.monotonic()

    def spawn():
        nonlocal serial
        serial += 1
        parent, child = ctx.Pipe()
        p = ctx.Process(target=_worker, args=(child, mem_mb, f"{tmp}/w{serial}"), daemon=True)
        p.start()
        child.close()
        return parent, p

    def give(conn):
        w = workers[conn]
        if not w[1] and pending:
            w[1] = pending.pop()
            conn.send((fmt, seed, w[1]))
            w[2] = time.monotonic()

    def replace(conn, outcome_for_current: tuple[str, str] | None):
        proc, remaining, _ = workers.pop(conn)
        if proc.is_alive():
            proc.kill()
        proc.join()
        conn.close()
        if remaining and outcome_for_current:
            stats.add(remaining[0], *outcome_for_current)
            if progress:
                progress(1)
            remaining = remaining[1:]
        if remaining:
            pending.append(remaining)
        if pending:
            c, p = spawn()
            workers[c] = [p, [], 0.0]
            give(c)

    for _ in range(max(1, min(jobs, len(pending)))):
        c, p = spawn()
        workers[c] = [p, [], 0.0]
        give(c)
    try:
        while workers:
            ready = wait(list(workers), timeout=0.5)
            for conn in ready:
                try:
                    i, outcome, detail = conn.recv()
                except (EOFError, OSError):
                    proc = workers[conn][0]
                    proc.join(1)
                    code = proc.exitcode
                    replace(conn, ("escape", f"worker died (exit {code})") if workers[conn][1] else None)
                    continue
                w = workers[conn]
                stats.add(i, outcome, detail)
                if progress:
                    progress(1)
                w[1] = [x for x in w[1] if x != i]
                w[2] = time.monotonic()
                if outcome == "memory":
                    replace(conn, None)
                    continue
                give(conn)
                if not w[1] and not pending:
                    conn.send(None)
                    w[0].join(5)
                    workers.pop(conn)
                    conn.close()
            now = time.monotonic()
            for conn, (proc, remaining, since) in list(workers.items()):
                if remaining and now - since > timeout:
                    replace(conn, ("hang", f"no answer after {timeout:.0f} s"))
    finally:
        for conn, (proc, *_rest) in list(workers.items()):
            proc.kill()
            proc.join()
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    stats.seconds = time.monotonic() - t0
    stats.findings.sort()
    return stats


# ---------------------------------------------------------------------------------- minimising
def minimise(fmt: str, label: str, parts: tuple[bytes, ...], outcome: tuple[str, str], workdir: Path,
             budget: float = 20.0) -> tuple[bytes, ...]:
    """Shrink the input while the case still ends the same way (same outcome and place): cut the
    tail, then zero blocks (64 KiB down to 512 B) that the failure does not need, so what is kept
    compresses to little."""
    deadline = time.monotonic() + budget
    key = (outcome[0], outcome[1].split(":")[0] if outcome[0] != "escape" else outcome[1].split(": ")[0])

    def same(ps) -> bool:
        got = run_parts(fmt, label, ps, workdir)
        return (got[0], got[1].split(":")[0] if got[0] != "escape" else got[1].split(": ")[0]) == key

    parts = list(parts)
    for k, data in enumerate(parts):
        cur = bytearray(data)
        # cut the tail while possible (halving steps), then zero whole spans
        step = len(cur) // 2
        while step >= 1 and time.monotonic() < deadline:
            trial = parts[:k] + [bytes(cur[:len(cur) - step])] + parts[k + 1:]
            if len(cur) > step and same(trial):
                cur = cur[:len(cur) - step]
            else:
                step //= 2
        for block in (65536, 4096, 512):
            for at in range(0, len(cur), block):
                if time.monotonic() > deadline:
                    break
                if not any(cur[at:at + block]):
                    continue
                trial_bytes = bytes(cur[:at]) + bytes(len(cur[at:at + block])) + bytes(cur[at + block:])
                if same(parts[:k] + [trial_bytes] + parts[k + 1:]):
                    cur = bytearray(trial_bytes)
        parts[k] = bytes(cur)
    return tuple(parts)


def save_crash(folder: Path, fmt: str, seed: int, index: int, parts: tuple[bytes, ...], label: str,
               outcome: str, detail: str) -> Path:
    """One crash as ``<fmt>-<digest>.part0.gz`` (+ ``.part1.gz``: an M2's skin) and a ``.json`` note."""
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha1(b"".join(parts)).hexdigest()[:12]
    stem = folder / f"{fmt}-{digest}"
    for k, p in enumerate(parts):
        Path(f"{stem}.part{k}.gz").write_bytes(gzip.compress(p, 9, mtime=0))
    note = {"format": fmt, "label": label, "seed": seed, "case": index, "outcome": outcome, "detail": detail,
            "parts": len(parts)}
    stem.with_suffix(".json").write_text(json.dumps(note, indent=1) + "\n")
    return stem


def load_crash(note_path: Path) -> tuple[dict, tuple[bytes, ...]]:
    note = json.loads(note_path.read_text())
    stem = note_path.with_suffix("")
    return note, tuple(gzip.decompress(Path(f"{stem}.part{k}.gz").read_bytes()) for k in range(note["parts"]))


# ------------------------------------------------------------------------------------------ main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=2000, help="cases per format (default 2000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--formats", default=",".join(FORMATS), help=f"comma list of {', '.join(FORMATS)}")
    ap.add_argument("--cli-cases", type=int, default=None, help="cases for the CLI target (default: --cases)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds before a case counts as a hang")
    ap.add_argument("--mem-mb", type=int, default=1024, help="memory budget per worker (RLIMIT_AS headroom)")
    ap.add_argument("--out", type=Path, default=None, help="folder for fuzz.json and crashes/")
    ap.add_argument("--crashes", type=Path, default=None, help="where minimised crashes go (default OUT/crashes)")
    ap.add_argument("--no-minimise", action="store_true")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)

    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    bad = [f for f in formats if f not in TARGETS]
    if bad:
        ap.error(f"unknown format(s) {', '.join(bad)} (known: {', '.join(FORMATS)})")
    table: dict[str, dict] = {}
    findings: dict[str, list] = {}
    t_all = time.monotonic()
    for fmt in formats:
        n = args.cli_cases if fmt == "cli" and args.cli_cases is not None else args.cases
        done = [0]
        last = [0.0]

        def tick(k, fmt=fmt, n=n, done=done, last=last):
            done[0] += k
            if not args.quiet and (time.monotonic() - last[0] > 2 or done[0] == n):
                last[0] = time.monotonic()
                print(f"\r  {fmt:7s} {done[0]:>8d}/{n}", end="", file=sys.stderr, flush=True)

        s = fuzz_format(fmt, args.seed, n, jobs=args.jobs, timeout=args.timeout, mem_mb=args.mem_mb, progress=tick)
        if not args.quiet:
            print(file=sys.stderr)
        table[fmt] = s.row()
        findings[fmt] = [{"case": i, "outcome": o, "detail": d} for i, o, d in s.findings]
        table[fmt]["no_offset_examples"] = s.no_offset_examples
    header = f"{'format':8s} {'cases':>8s} {'parsed':>8s} {'clean':>8s} {'no-offs':>8s} {'escapes':>8s} " \
             f"{'hangs':>6s} {'memory':>7s} {'cases/s':>8s}"
    for note in SKIPPED:
        print(f"note: {note}")
    print(header)
    for fmt, r in table.items():
        print(f"{fmt:8s} {r['cases']:8d} {r['parsed']:8d} {r['clean']:8d} {r['no_offset']:8d} {r['escapes']:8d} "
              f"{r['hangs']:6d} {r['memory']:7d} {r['cases_per_s'] or 0:8.1f}")
    for fmt, rows in findings.items():
        for f in rows[:20]:
            print(f"  {fmt} case {f['case']}: {f['outcome']}: {f['detail']}")
    crash_dir = args.crashes or (args.out / "crashes" if args.out else None)
    saved = []
    if crash_dir and not args.no_minimise:
        wd = Path(tempfile.mkdtemp(prefix="wowgrass-fuzz-min-"))
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)   # the workers' limit, here too
        resource.setrlimit(resource.RLIMIT_AS, (_vm_bytes() + args.mem_mb * 2**20, hard))
        seen = set()
        for fmt, rows in findings.items():
            for f in rows:
                key = (fmt, f["outcome"], f["detail"].split(": ")[0])
                if key in seen or f["outcome"] == "hang":
                    continue           # hangs are kept as case numbers: replaying them would hang
                seen.add(key)
                label, parts, _kinds = make_case(fmt, args.seed, f["case"])
                small = minimise(fmt, label, parts, (f["outcome"], f["detail"]), wd)
                saved.append(str(save_crash(crash_dir, fmt, args.seed, f["case"], small, label, f["outcome"],
                                            f["detail"])))
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        from wowgrass.fileio import write_atomic

        report = {"seed": args.seed, "cases": args.cases, "jobs": args.jobs, "timeout_s": args.timeout,
                  "mem_mb": args.mem_mb, "seconds": round(time.monotonic() - t_all, 1), "table": table,
                  "findings": findings, "crashes_saved": saved, "skipped_bases": SKIPPED, "argv": sys.argv}
        write_atomic(args.out / "fuzz.json", (json.dumps(report, indent=1) + "\n").encode())
    bad_total = sum(r["escapes"] + r["hangs"] + r["memory"] for r in table.values())
    return 1 if bad_total else 0


if __name__ == "__main__":
    sys.exit(main())
