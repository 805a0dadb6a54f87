"""Bake: ADT bytes + GroundEffectCatalog + models -> placement -> one cached bundle per tile.

What ``wowgrass bake`` calls. One tile: :func:`bake_tile` (parse, look the bundle up in the
cache by its provenance key, place, write atomically). Many tiles: :func:`bake_map` enumerates
the map's tiles from the WDT's MAIN table and bakes them in parallel processes.

Provenance (what a bundle's cache key hashes): bundle format version, placement code version,
sha256 of the ADT bytes, sha256 of the GroundEffectTexture/Doodad rows the tile uses (with
their model paths), the strategy and all its constants, map name, tile, build, the big-alpha
flag and the model table (present flag, bounding box and z range of every model). Change any of
them and the bundle is re-baked; otherwise a repeated bake is a cache hit.

Bundles live in ``<cache>/bundles/<map>/<map>_<col>_<row>.<strategy>.<key16>.wgb``; writing a new
one removes older bundles of the same tile and strategy.
"""

from __future__ import annotations

import hashlib
import logging
import os
import contextlib
import re
import signal
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from wowgrass.grass import bundle as B
from wowgrass.errors import FormatError, GameFileNotFound, OutputError, UsageError, WowgrassError
from wowgrass.fileio import write_atomic
from wowgrass.paths import cache_dir, find_table
from wowgrass.pools import stop_pool as _stop_pool   # the one stop of every pool
from wowgrass.grass.capacity import ModelGeometry, draw_capacity, missing_geometry, model_geometry
from wowgrass.grass.placement import (PLACEMENT_VERSION, PlacementConstants, client_picks, client_picks_note,
                                      is_335_routine, make_strategy, unknown_effect_ids, used_effect_ids,
                                      why_no_grass)

log = logging.getLogger(__name__)

#: said where a client bake's draw capacity met models the data lacks (grass/capacity.py)
MISSING_CAPACITY_NOTE = ("note: for the draw capacity each missing grass model counts as a texture of its own, "
                         "with no vertices (its batch never fills)")
TEXTURE_TABLE = "GroundEffectTexture.dbc"
DOODAD_TABLE = "GroundEffectDoodad.dbc"


@dataclass
class BakeResult:
    map: str
    tile: tuple[int, int]
    path: str
    key: str
    instances: int
    models: int
    missing_models: list[str]
    cache_hit: bool
    rebuilt: str | None = None  # why an existing bundle was not used (corrupt, truncated, stale)
    seconds: dict = field(default_factory=dict)
    cpu_seconds: dict = field(default_factory=dict)  # the same stages in this process's CPU time
    unknown_effects: dict = field(default_factory=dict)  # {"ids": [...], "cells": n}: ids the tables lack
    no_grass: str | None = None  # why a tile got no instance (placement.why_no_grass)
    #: placements the client's draw capacity left out (None: not applied, as for the coverage placement)
    capacity_dropped: int | None = None
    notes: list[str] = field(default_factory=list)  # "note: ..." lines for the user (once per bake)

    def to_dict(self) -> dict:
        """JSON shape: ``file`` is the bundle; ``model_count`` a number (``missing_models`` a list)."""
        d = asdict(self)
        d["tile"] = list(self.tile)
        d["file"] = d.pop("path")
        d["model_count"] = d.pop("models")
        d["capacity_dropped_count"] = d.pop("capacity_dropped")
        return d


# ----------------------------------------------------------------------------- inputs


def load_catalog(*, data=None, dbc_dir=None, build: str | None = None):
    """The GroundEffectCatalog from a folder of loose .dbc files (``dbc_dir``), else from a data
    source; a loose folder without the tables (a map folder of an extracted client) takes them from
    the nearest folder above it that has them (see :func:`wowgrass.paths.tables_above`)."""
    from wowgrass.game.effects import DOODAD_PATH, TEXTURE_PATH, GroundEffectCatalog

    if dbc_dir is None and data is not None and not all(data.exists(p) for p in (TEXTURE_PATH, DOODAD_PATH)):
        if not getattr(data, "archives", None):
            dbc_dir = tables_above(data.root)
    if dbc_dir is not None:
        folder = Path(dbc_dir)
        if not folder.is_dir():
            raise UsageError(f"--dbc {folder}: not a folder")
        tables = []
        for name in (TEXTURE_TABLE, DOODAD_TABLE):
            p = find_table(folder, name)
            if p is None:
                raise UsageError(f"{folder} has no {name}, nor has its DBFilesClient folder (the bake needs "
                                 "GroundEffectTexture.dbc and GroundEffectDoodad.dbc)")
            tables.append(p)
        return GroundEffectCatalog.from_dbc_bytes(tables[0].read_bytes(), tables[1].read_bytes(), build,
                                                  texture_path=str(tables[0]), doodad_path=str(tables[1]))
    for path in (TEXTURE_PATH, DOODAD_PATH):
        if not data.exists(path):
            hint = data.locale_note() if hasattr(data, "locale_note") else None
            raise UsageError(f"{data.root} has no {path} (" + (hint or "the bake needs both ground-effect tables; "
                             "give --dbc DIR, or --data the client's Data folder") + ")")
    catalog = GroundEffectCatalog.from_data(data, build)
    log.info("tables %s and %s from %s: build %s, %d effects, %d models", TEXTURE_PATH, DOODAD_PATH, data.root,
             catalog.build, len(catalog.ids), len(catalog.models))
    return catalog


def tables_above(folder) -> Path | None:
    """The nearest folder above ``folder`` (up to three levels: World\\Maps\\<Map> in a client tree)
    holding both ground-effect tables, itself or in its DBFilesClient folder; None if none does."""
    here = Path(folder).resolve()
    for parent in list(here.parents)[:3]:
        if all(find_table(parent, n) is not None for n in (TEXTURE_TABLE, DOODAD_TABLE)):
            return parent
    return None


class ModelTable:
    """Bounding box and z range of detail models, read once per process from the data source."""

    def __init__(self, read: Callable[[str], bytes] | None):
        self.read = read
        self._cache: dict[str, B.ModelInfo] = {}
        self._geometry: dict[str, ModelGeometry] = {}

    def geometry(self, path: str) -> ModelGeometry:
        """The texture and first-submesh counts the client's draw capacity takes (grass/capacity.py)."""
        self.info(path)
        return self._geometry[path.lower()]

    def info(self, path: str) -> B.ModelInfo:
        hit = self._cache.get(path.lower())
        if hit is not None:
            return hit
        info = B.ModelInfo(path)
        geometry = missing_geometry(path)
        if self.read is not None:
            try:
                from wowgrass.formats.m2 import M2Model

                model = M2Model.from_bytes(self.read(path), path, read=self.read)
                pos = np.asarray(model.vertices["pos"], dtype=np.float32)
                z = pos[:, 2] if len(pos) else np.array([model.bbox_min[2], model.bbox_max[2]], np.float32)
                info = B.ModelInfo(path, True, tuple(model.bbox_min), tuple(model.bbox_max),
                                   float(z.min()), float(z.max()))
                geometry = model_geometry(model, path)
            except (GameFileNotFound, FileNotFoundError, FormatError):
                pass  # recorded as missing: the viewer names it
        self._cache[path.lower()] = info
        self._geometry[path.lower()] = geometry
        return info


# ----------------------------------------------------------------------------- one tile


def canonical_map(map_name: str) -> str:
    """The spelling of ``map_name`` the cache already holds bundles under (a map's folder and its
    Map.dbc name may differ in case: one set of bundles, not two), else ``map_name``."""
    root = cache_dir() / "bundles"
    if (root / map_name).is_dir() or not root.is_dir():
        return map_name
    low = map_name.lower()
    for p in root.iterdir():
        if p.name.lower() == low and p.is_dir():
            return p.name
    return map_name


def bundle_path(map_name: str, col: int, row: int, strategy: str, key: str) -> Path:
    return cache_dir() / "bundles" / map_name / f"{map_name}_{col}_{row}.{strategy}.{key[:16]}{B.SUFFIX}"


SOURCES_FILE = ".sources.json"


def _bundle_build(path) -> str | None:
    """The build a bundle's provenance records (the ground-effect tables' layout it was baked with)."""
    try:
        with B.read_bundle(path, verify=False) as b:
            return b.provenance.get("build")
    except (OSError, WowgrassError):
        return None


def record_source(map_name: str, data_root, build: str | None, tiles) -> None:
    """Note in the map's bundle folder which data source (and build) baked which tiles, so that
    `cache ls` tells two clients' maps of one name apart. Best effort: a cache that cannot take
    it is not an error here."""
    import json
    from datetime import datetime, timezone

    folder = cache_dir() / "bundles" / map_name
    path = folder / SOURCES_FILE
    try:
        known = json.loads(path.read_text()) if path.is_file() else {}
        if not isinstance(known, dict):
            known = {}
    except (OSError, ValueError):
        known = {}
    if data_root is None:
        key = "(tables only)"
    elif isinstance(data_root, (list, tuple)):   # layered data: the folders in order
        key = " + ".join(str(Path(p).resolve()) for p in data_root)
    else:
        key = str(Path(data_root).resolve())
    entry = known.get(key) if isinstance(known.get(key), dict) else {}
    done = {tuple(t) for t in entry.get("tiles", []) if isinstance(t, list) and len(t) == 2}
    done |= {(int(c), int(r)) for c, r in tiles}
    known[key] = {"build": build, "tiles": sorted([list(t) for t in done], key=lambda t: (t[1], t[0])),
                  "last_used": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(known, indent=1, sort_keys=True).encode())
    except (OSError, WowgrassError) as exc:
        log.info("could not record the data source in %s: %s", path, exc)


def client_draw_capacity(inst, catalog, strategy, models: ModelTable):
    """What the client draws of a placement: (the instances kept, how many its draw capacity dropped),
    or (``inst``, None) where no capacity applies (the coverage placement, ``client_capacity=0``).
    Per chunk, so a chunk placed alone keeps what it keeps in its whole tile (the workbench's session)."""
    if strategy.name != "client" or not strategy.constants.client_capacity:
        return inst, None
    used = np.unique(np.asarray(inst.model)).tolist()
    geometry = {m: models.geometry(catalog.models[m]) for m in used}
    keep = draw_capacity(inst.chunk, inst.model, geometry, client_picks(strategy.constants, catalog),
                         is_335_routine(catalog))
    dropped = int(keep.size - np.count_nonzero(keep))
    return (inst.take(keep) if dropped else inst), dropped


def provenance(*, adt_bytes, tile, catalog, strategy, map_name, big_alpha, models: list[B.ModelInfo],
               effect_ids, capacity: list[ModelGeometry] | None = None) -> dict:
    """What a bundle's key hashes; ``capacity``: the models' textures and counts a client bake's draw
    capacity takes (``capacity_models``: [texture, vertices, indices, known] per model)."""
    prov = {
        "format": "wowgrass-bundle",
        "format_version": B.FORMAT_VERSION,
        "placement_version": PLACEMENT_VERSION,
        "map": map_name,
        "tile": [int(tile.col), int(tile.row)],
        "build": catalog.build,
        "big_alpha": bool(big_alpha),
        "adt_sha256": hashlib.sha256(adt_bytes).hexdigest(),
        "dbc_rows_sha256": catalog.rows_digest(effect_ids),
        "effect_ids": [int(e) for e in effect_ids],
        "placement": strategy.name,
        "constants": strategy.constants.to_dict(),
        "models": [m.to_dict() for m in models],
    }
    if capacity is not None:
        prov["capacity_models"] = [g.to_list() for g in capacity]
    return prov


def bake_tile(
    adt_bytes: bytes,
    catalog,
    *,
    map_name: str,
    placement: str = "coverage",
    constants: PlacementConstants | None = None,
    models: ModelTable | None = None,
    big_alpha: bool | None = False,
    adt_path: str | None = None,
    out: str | os.PathLike | None = None,
    force: bool = False,
    tile=None,
    folder: BundleFolder | None = None,
    direct: bool = False,
    writes: BackgroundWrites | None = None,
) -> BakeResult:
    """Bake one tile into ``out`` (or its cache path); a valid bundle with the same key is kept.

    ``tile``: the :class:`AdtTile` of ``adt_bytes`` when the caller has parsed it already (the
    viewer needs it too); the provenance still hashes ``adt_bytes``. ``folder``: the cache
    folder's listing, when many tiles are baked (see :class:`BundleFolder`). ``direct``: write
    the bundle past the page cache where the system allows (a map's bake: nothing reads its
    gigabytes back soon). ``writes``: the file is written (and the tile's older bundles pruned)
    on that thread while the caller goes on; the caller waits for it before using the bundle.
    """
    from wowgrass.game.tiles import read_adt

    models = models or ModelTable(None)
    c0 = time.process_time()
    if out is None:
        map_name = canonical_map(map_name)
    t0 = time.perf_counter()
    if tile is None:   # big_alpha None (no WDT): as the tile parses (terrain.read_adt)
        tile = read_adt(adt_bytes, adt_path, big_alpha)
    big_alpha = bool(tile.big_alpha)
    t1, c1 = time.perf_counter(), time.process_time()
    strategy = make_strategy(placement, constants)
    effect_ids = used_effect_ids(tile, catalog)
    unknown_ids, unknown_cells = unknown_effect_ids(tile, catalog)
    unknown = {"ids": unknown_ids.tolist(), "cells": unknown_cells} if unknown_ids.size else {}
    rows = catalog.lookup(effect_ids)
    used_models = np.unique(np.asarray(catalog.slot_model)[rows[rows >= 0]])
    used_models = used_models[used_models >= 0]
    infos = [models.info(catalog.models[m]) for m in used_models.tolist()]
    # the client placement keeps its scatter order in the bundle, and what the draw capacity keeps of it
    client = strategy.name == "client"
    capacity = None
    if client and strategy.constants.client_capacity:
        capacity = [models.geometry(catalog.models[m]) for m in used_models.tolist()]
    prov = provenance(adt_bytes=adt_bytes, tile=tile, catalog=catalog, strategy=strategy, map_name=map_name,
                      big_alpha=big_alpha, models=infos, effect_ids=effect_ids, capacity=capacity)
    notes = [n for n in (client_picks_note(strategy.constants, catalog) if client else None,) if n]
    if capacity is not None and is_335_routine(catalog) and any(not g.known for g in capacity):
        notes.append(MISSING_CAPACITY_NOTE)
    key = B.provenance_key(prov)
    col, row = int(tile.col), int(tile.row)
    path = Path(out) if out is not None else bundle_path(map_name, col, row, strategy.name, key)
    rebuilt = None
    if path.exists() and not force:
        try:
            with B.read_bundle(path, expect_key=key) as old:
                result = BakeResult(map_name, (col, row), str(path), key, old.instance_count, len(old.models),
                                    [m.path for m in old.models if not m.info.present], True,
                                    capacity_dropped=old.capacity_dropped, notes=notes)
            result.seconds = {"parse": t1 - t0, "total": time.perf_counter() - t0}
            result.unknown_effects = unknown
            log.info("tile %d,%d: cache hit %s (%s instances)", col, row, path, f"{result.instances:,}")
            if not result.instances:
                result.no_grass = why_no_grass(tile, catalog)
            return result
        except FormatError as exc:  # truncated, corrupt or stale: never drawn, rebuilt below
            rebuilt = f"{type(exc).__name__}: {exc.reason}"
            log.warning("%s; the bundle is baked again", exc)
    t2, c2 = time.perf_counter(), time.process_time()
    inst, dropped = client_draw_capacity(strategy.place(tile, catalog, map_name=map_name), catalog, strategy,
                                         models)
    t3, c3 = time.perf_counter(), time.process_time()
    # the bundle's model table: catalogue model index -> info (only models in use get instances)
    table = _ModelInfos(catalog.models, dict(zip(used_models.tolist(), infos)))
    if writes is not None:
        writes.wait()  # the last bundle is on disk: its buffer may be reused
    data = B.instances_bundle_data(inst, table, prov, direct=direct, scatter_order=client, capacity_dropped=dropped)

    def write():
        write_atomic(path, data, durable=out is not None, sweep=False)  # the cache is checksummed
        if out is None:
            folder.prune(path) if folder is not None else _prune(path)

    writes.submit(write) if writes is not None else write()
    t4, c4 = time.perf_counter(), time.process_time()
    present = np.nonzero(inst.model_counts())[0]
    missing = [table[m].path for m in present.tolist() if not table[m].present]
    log.info("tile %d,%d: %s instances of %d models placed (%s) -> %s", col, row, f"{len(inst):,}", present.size,
             strategy.name, path)
    if missing:
        log.info("tile %d,%d: models not in the data (instances kept): %s", col, row, ", ".join(missing))
    return BakeResult(map_name, (col, row), str(path), key, len(inst), int(present.size), missing, False, rebuilt,
                      {"parse": t1 - t0, "place": t3 - t2, "write": t4 - t3, "total": time.perf_counter() - t0},
                      {"parse": c1 - c0, "place": c3 - c2, "write": c4 - c3, "total": time.process_time() - c0},
                      unknown, None if len(inst) else why_no_grass(tile, catalog), dropped, notes)


class _ModelInfos:
    """A read-only list view: catalogue model index -> ModelInfo (known ones, else "missing")."""

    def __init__(self, paths: list[str], known: dict[int, B.ModelInfo]):
        self.paths, self.known = paths, known

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> B.ModelInfo:
        return self.known.get(i) or B.ModelInfo(self.paths[i])


STALE_TEMP_SECONDS = 3600


def sweep_temporaries(folder: Path, older_than: float = STALE_TEMP_SECONDS) -> int:
    """Delete temporary bundle and grid files a killed process left in ``folder`` (its pid is gone,
    or the file is over ``older_than`` seconds old)."""
    from wowgrass.fileio import sweep_temporaries as sweep
    from wowgrass.grass.grid_tiles import SUFFIX as GRID_SUFFIX

    return sum(sweep(folder, f".*{suffix}.*.tmp", older_than) for suffix in (B.SUFFIX, GRID_SUFFIX))


def _bundle_stem(name: str) -> str:
    return name.rsplit(".", 2)[0]  # <map>_<col>_<row>.<strategy>


def _prune(path: Path, existing: list[Path] | None = None) -> None:
    """Remove older bundles of the same tile and strategy (other keys) beside ``path``: those of
    ``existing`` (a folder listing taken earlier), else those found by scanning the folder."""
    stem = _bundle_stem(path.name)
    if existing is None:
        existing = path.parent.glob(f"{stem}.*{B.SUFFIX}")
    for other in existing:
        if other != path and other.name.count(".") == path.name.count(".") and _bundle_stem(other.name) == stem:
            try:
                other.unlink()
            except OSError:
                pass


class BackgroundWrites:
    """Bundle writes on a thread of their own, one at a time: a bake worker places its next tile
    while the disk takes the last bundle (a direct write waits for the device). :meth:`wait`
    before the next bundle is built (it reuses the buffer) and before the bundles are reported;
    a failed write raises there."""

    def __init__(self):
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="wowgrass-bundle-write")
        self._pending = None

    def submit(self, fn) -> None:
        self.wait()
        self._pending = self._pool.submit(fn)

    def wait(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def close(self) -> None:
        try:
            self.wait()
        finally:
            self._pool.shutdown(wait=True)


class BundleFolder:
    """A map's bundle folder, listed once: a whole-map bake prunes each tile's older bundles from
    this listing instead of scanning a folder of hundreds of bundles once per tile."""

    def __init__(self, folder: Path):
        self.by_stem: dict[str, list[Path]] = {}
        if folder.is_dir():
            for p in folder.glob(f"*{B.SUFFIX}"):
                self.by_stem.setdefault(_bundle_stem(p.name), []).append(p)

    def prune(self, path: Path) -> None:
        _prune(path, self.by_stem.get(_bundle_stem(path.name), []))


def bake_file(
    adt_file,
    *,
    data=None,
    dbc_dir=None,
    build: str | None = None,
    map_name: str | None = None,
    placement: str = "coverage",
    constants: PlacementConstants | None = None,
    out=None,
    force: bool = False,
    big_alpha: bool | None = None,
) -> BakeResult:
    """Bake a loose ADT file; tables from ``data`` (a GameData) or ``dbc_dir``."""
    from wowgrass.formats.wdt import WdtFile
    from wowgrass.game.tiles import sibling_wdt, tile_from_name, wdt_game_path

    path = Path(adt_file)
    raw = path.read_bytes()
    name, _ = tile_from_name(path)
    map_name = map_name or name
    catalog = load_catalog(data=data, dbc_dir=dbc_dir, build=build)
    if big_alpha is None:   # the WDT beside the file or in the data; without one, from the tile itself
        wdt = sibling_wdt(path)
        if wdt is not None:
            big_alpha = WdtFile.from_bytes(wdt.read_bytes(), str(wdt)).big_alpha
        elif data is not None and data.exists(wdt_game_path(map_name)):
            big_alpha = WdtFile.from_bytes(data.read(wdt_game_path(map_name)), wdt_game_path(map_name)).big_alpha
    models = ModelTable(data.read if data is not None else None)
    res = bake_tile(raw, catalog, map_name=map_name, placement=placement, constants=constants, models=models,
                    big_alpha=big_alpha, adt_path=str(path), out=out, force=force)
    if out is None:
        record_source(res.map, data.root if data is not None else path.parent, catalog.build, [res.tile])
    return res


# ----------------------------------------------------------------------------- many tiles


def parse_tile_ranges(text: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """``"C0:C1,R0:R1"`` (inclusive; a single number is a one-tile range) -> ((c0, c1), (r0, r1))."""
    m = re.fullmatch(r"\s*(\d+)(?::(\d+))?\s*,\s*(\d+)(?::(\d+))?\s*", text or "")
    if not m:
        raise UsageError(f"--tile must be COL,ROW or C0:C1,R0:R1 (inclusive column and row ranges), got {text!r}")
    c0, c1, r0, r1 = (int(g) if g is not None else None for g in m.groups())
    c1 = c0 if c1 is None else c1
    r1 = r0 if r1 is None else r1
    for v in (c0, c1, r0, r1):
        if not 0 <= v < 64:
            raise UsageError(f"--tile {text}: columns and rows must be 0..63")
    if c1 < c0 or r1 < r0:
        raise UsageError(f"--tile {text}: a range must not run backwards")
    return (c0, c1), (r0, r1)


def map_tiles(data, map_name: str, ranges=None) -> tuple[list[tuple[int, int]], bool]:
    """(col, row) of the map's tiles present in ``data`` (those its WDT lists, or its ADT files
    without a WDT; within ``ranges``), and the WDT's big-alpha flag (see :mod:`wowgrass.game.maps`)."""
    from wowgrass.game.maps import map_tiles as tiles_of

    mt = tiles_of(data, map_name, [ranges] if ranges is not None else None)
    return mt.tiles, mt.big_alpha


_WORKER: dict = {}

#: the signals that stop a bake: the parent ends the workers itself, so they ignore Ctrl-C
#: (sent to the whole process group) and die at once on SIGTERM
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class BakeInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM during :func:`bake_map`: the workers are stopped; ``results`` are the
    tiles finished (their bundles are in the cache); ``signum`` the signal."""

    def __init__(self, results, failures, total: int, signum: int = signal.SIGINT):
        self.results, self.failures, self.total, self.signum = results, failures, total, int(signum)
        done = len(results) + len(failures)
        what = "interrupted" if self.signum == signal.SIGINT else f"stopped by {signal.Signals(self.signum).name}"
        super().__init__(f"{what} after {done:,} of {total:,} tiles; {len(results):,} "
                         f"{'is' if len(results) == 1 else 'are'} cached (bake again to finish)")


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised as Ctrl-C is (see :func:`terminate_as_interrupt`)."""

    signum = signal.SIGTERM


@contextlib.contextmanager
def terminate_as_interrupt():
    """SIGTERM stops a bake as Ctrl-C does (workers ended, what was done said), in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_term(signum, frame):
        raise Terminated()

    old = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _pool_worker_init(*args):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)   # not the parent's handler, inherited by fork
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)   # blocked by the parent while it forked
    _worker_init(*args)


_MALLOC_TUNED = []


def keep_freed_memory() -> bool:
    """Ask glibc's malloc to keep freed memory for reuse instead of handing it back at once.

    A tile's bake allocates and frees arrays of megabytes (instances, bundle bytes); by default
    each one above 128 kB-32 MB is a fresh mmap whose pages fault in one by one, and on a
    virtual machine that costs more than the arithmetic (measured here: placement 55-68 ms of
    CPU a tile, 25-30 with this). The process keeps its peak heap instead (a few hundred MB for
    a bake worker). True where it took (glibc); elsewhere nothing changes.
    """
    if _MALLOC_TUNED:
        return _MALLOC_TUNED[0]
    ok = False
    try:
        import ctypes
        import ctypes.util

        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        m_trim, m_top_pad, m_mmap = -1, -2, -3  # mallopt parameters (malloc.h)
        ok = bool(libc.mallopt(m_mmap, 32 << 20)) and bool(libc.mallopt(m_trim, 1 << 30))
        libc.mallopt(m_top_pad, 64 << 20)
    except (OSError, AttributeError):
        pass
    _MALLOC_TUNED.append(ok)
    return ok


def _worker_init(spec, build, map_name, placement, constants, big_alpha, force, dbc_dir=None, direct=False):
    keep_freed_memory()
    data = spec.open()   # the parent's GameData.spec(): the same archives and layers
    catalog = load_catalog(data=data, dbc_dir=dbc_dir, build=build)
    _WORKER.update(data=data, catalog=catalog, models=ModelTable(data.read), map=map_name, placement=placement,
                   constants=constants, big_alpha=big_alpha, force=force, direct=direct, writes=BackgroundWrites(),
                   folder=BundleFolder(cache_dir() / "bundles" / map_name))


@dataclass
class TileFailure:
    tile: tuple[int, int]
    error: str

    def to_dict(self) -> dict:
        return {"tile": list(self.tile), "error": self.error}


def _worker_bake(tiles: list[tuple[int, int]]) -> list[BakeResult | TileFailure]:
    """Bake a chunk of tiles with this process's data, catalogue and model table. The ADTs are
    read through ``read_many``, so the next ones decompress (on spare cores) while one is placed."""
    from wowgrass.game.tiles import adt_game_path

    w = _WORKER
    names = [adt_game_path(w["map"], c, r) for c, r in tiles]
    out: list[BakeResult | TileFailure] = []
    reads = w["data"].read_many(names)
    for (col, row), name in zip(tiles, names):
        t0, c0 = time.perf_counter(), time.process_time()
        raw = next(reads)[1]
        read_s, read_cpu = time.perf_counter() - t0, time.process_time() - c0
        try:
            if isinstance(raw, WowgrassError):
                raise raw
            res = bake_tile(raw, w["catalog"], map_name=w["map"], placement=w["placement"],
                            constants=w["constants"], models=w["models"], big_alpha=w["big_alpha"], adt_path=name,
                            force=w["force"], folder=w["folder"], direct=w["direct"], writes=w["writes"])
            res.seconds["read"] = read_s
            res.cpu_seconds["read"] = read_cpu
            out.append(res)
        except OutputError:
            raise  # a full or read-only cache stops the map: every other tile would fail the same way
        except WowgrassError as exc:  # one bad tile does not stop the map (sent back as text)
            out.append(TileFailure((col, row), str(exc)))
    w["writes"].wait()  # every bundle of the chunk on disk before it is reported
    return out


def chunk_size(tiles: int, jobs: int) -> int:
    """Tiles handed to a worker at once: enough to make the hand-over cheap (a chunk costs a
    pickle of its results, well under a tile's time), few enough that the workers finish
    together (about 32 chunks per worker, at most 4 tiles each)."""
    return max(1, min(4, tiles // (32 * max(jobs, 1))))


def bake_map(
    data_root,
    map_name: str,
    *,
    tiles: Iterable[tuple[int, int]] | None = None,
    ranges=None,
    jobs: int = 1,
    build: str | None = None,
    placement: str = "coverage",
    constants: PlacementConstants | None = None,
    force: bool = False,
    progress: Callable[[BakeResult | TileFailure], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    chunk: int | None = None,
    dbc_dir=None,
    direct: bool = True,
) -> tuple[list[BakeResult], list[TileFailure]]:
    """Bake many tiles of ``map_name`` from the data folder ``data_root``, ``jobs`` processes at once.

    ``dbc_dir``: the tables from there instead of the data source (as ``--dbc``). The tiles are
    those present (a WDT may list tiles a partial extract lacks). Each process opens the data
    source and loads the tables once and is handed chunks of
    ``chunk`` tiles (default :func:`chunk_size`); every bundle goes to the cache as soon as it
    is placed. ``on_start`` gets the number of tiles to bake before the first; ``progress`` is
    called in the parent after every tile, as chunks come back. Failures (a tile's ADT missing
    or corrupt) are returned, not raised. The bundles are the same bytes whatever ``jobs`` is.
    ``direct`` (default): bundles go to disk past the page cache where the system allows (see
    :func:`wowgrass.fileio.write_atomic`); False writes them through the page cache.
    """
    from wowgrass.game.data import open_data
    from wowgrass.formats.mpq import default_threads

    make_strategy(placement, constants)  # fail early on a bad name
    with open_data(data_root, build=build, threads=1) as data:
        listed, big_alpha = map_tiles(data, map_name, ranges if tiles is None else None)
        build = build or data.build
    map_name = canonical_map(map_name)
    folder = cache_dir() / "bundles" / map_name
    if folder.is_dir():
        sweep_temporaries(folder)
    todo = list(tiles) if tiles is not None else listed
    if on_start is not None:
        on_start(len(todo))
    jobs = max(1, min(jobs, len(todo)))
    threads = max(1, default_threads() // jobs)    # decompression threads per worker
    args = (data.spec(threads=threads), build, map_name, placement, constants, big_alpha, force,
            None if dbc_dir is None else str(dbc_dir), bool(direct))
    size = chunk or chunk_size(len(todo), jobs)
    chunks = [todo[i:i + size] for i in range(0, len(todo), size)]
    results: list[BakeResult] = []
    failures: list[TileFailure] = []

    def record(chunk_results):
        for res in chunk_results:
            (failures if isinstance(res, TileFailure) else results).append(res)
            if progress is not None:
                progress(res)

    with terminate_as_interrupt():
        _bake_chunks(args, chunks, jobs, record, results, failures, len(todo))
    results.sort(key=lambda r: (r.tile[1], r.tile[0]))
    if results:   # a loose folder names no build: the tables' layout, as the bundles record it
        record_source(map_name, data_root, build or _bundle_build(results[0].path), [r.tile for r in results])
    return results, failures


def _bake_chunks(args, chunks, jobs, record, results, failures, total) -> None:
    from wowgrass.formats.mpq import release_threads

    if jobs == 1:
        _worker_init(*args)
        try:
            for chunk in chunks:
                record(_worker_bake(chunk))
        except KeyboardInterrupt as exc:
            raise BakeInterrupted(results, failures, total, getattr(exc, "signum", signal.SIGINT)) from None
        finally:
            _WORKER.pop("data").close()
            _WORKER.pop("writes").close()
            _WORKER.clear()
    else:
        release_threads()
        pool = None
        # Ctrl-C or SIGTERM while the workers are forked waits until the pool is whole (the
        # workers unblock them in their initializer, ignoring Ctrl-C: the parent stops them)
        main_thread = hasattr(signal, "pthread_sigmask")
        if main_thread:
            signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
        try:
            try:
                pool = ProcessPoolExecutor(max_workers=jobs, initializer=_pool_worker_init, initargs=args)
                futures = [pool.submit(_worker_bake, chunk) for chunk in chunks]
            finally:
                if main_thread:
                    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
            for fut in as_completed(futures):
                record(fut.result())
        except BrokenProcessPool:
            _stop_pool(pool)
            raise WowgrassError(f"a bake process died (killed, or out of memory) after {len(results)} of "
                                f"{total} tiles; the bundles written so far are complete: bake again "
                                "to finish") from None
        except KeyboardInterrupt as exc:
            old = {s: signal.signal(s, signal.SIG_IGN) for s in _STOP_SIGNALS}   # a second Ctrl-C
            try:
                if pool is not None:
                    _stop_pool(pool)
            finally:
                for s, h in old.items():
                    signal.signal(s, h)
            results.sort(key=lambda r: (r.tile[1], r.tile[0]))
            raise BakeInterrupted(results, failures, total, getattr(exc, "signum", signal.SIGINT)) from None
        except BaseException:
            if pool is not None:
                _stop_pool(pool)
            raise
        else:
            pool.shutdown(wait=True)


def default_data():
    """The sample world's Data folder (built once) and its map name, for bakes without --data."""
    from wowgrass import samples

    return samples.sample_data_path(), samples.MAP_NAME


def sample_tables_for(adt) -> Path:
    """The sample world's Data folder when ``adt`` is one of its tiles, else an error naming what is
    missing: a real ADT's grass needs its client's tables."""
    from wowgrass.samples import MAP_NAME
    from wowgrass.game.tiles import tile_from_name

    name, _ = tile_from_name(Path(adt))
    if name.lower() != MAP_NAME.lower():
        raise UsageError(f"{adt}: no ground-effect tables; give --data DIR (the client's Data folder) or --dbc DIR "
                         "(a folder with GroundEffectTexture.dbc and GroundEffectDoodad.dbc)")
    return default_data()[0]


def tables_for(adt) -> tuple[Path | None, Path | None]:
    """Where the tables for an ADT file given without --data or --dbc come from, as (data folder,
    tables folder): the sample world for its own tiles, else the tables beside the file or in the
    nearest folder above it that has them (an extracted client's DBFilesClient); else an error
    naming both options: a real ADT's grass needs its client's tables."""
    from wowgrass.samples import MAP_NAME
    from wowgrass.game.tiles import tile_from_name

    path = Path(adt)
    name, _ = tile_from_name(path)
    if name.lower() == MAP_NAME.lower():
        return default_data()[0], None
    folder = path.resolve().parent
    if all(find_table(folder, n) is not None for n in (TEXTURE_TABLE, DOODAD_TABLE)):
        return None, folder
    above = tables_above(folder)
    if above is not None:
        return None, above
    raise UsageError(f"{adt}: no ground-effect tables beside it or above it; give --data DIR (the client's Data "
                     "folder) or --dbc DIR (a folder with GroundEffectTexture.dbc and GroundEffectDoodad.dbc)")
