"""Worker processes for the workbench's per-tile computations (a tile's overlay facts, the audit, a
tile read and parsed ahead of a brush or a pick), so that no frame waits on their numpy under the
view process's GIL.

Each worker owns two shared-memory blocks (``multiprocessing.shared_memory``): the tile's bytes go
in through one (a copy into a mapped buffer, no pickling), the (128, 128, 4) overlay image comes back
through the other; the pipe carries only small messages (ids, the tile's texture names, the effect
ids met). A tile the session has not read is read by the worker from its own opening of the data
(``GameData.spec()``). The tables reach a worker once per version. A job names the tile's version:
a result for bytes that have changed since is dropped by the caller (a newer job is on its way).

A worker that dies (killed, out of memory) is started again and its job given to it once more; a
job that kills two workers is reported as failed. A parsed tile (``submit_parse``) comes back as
its bytes and its arrays (pickle protocol 5, the arrays out of band) in a shared-memory block the
worker makes for it; the pool's thread copies them out in one piece and unlinks the block.
:meth:`TileWorkers.close` stops them and unlinks their memory. Results are handed to ``on_result(kind, job, payload)`` on the pool's own thread,
which only copies them out of the mapped block (the caller maps them on the frame's thread).
"""

from __future__ import annotations

import itertools
import os
import pickle
from pathlib import Path
import threading
from collections import deque
from dataclasses import dataclass, field

import numpy as np

IMAGE_SHAPE = (128, 128, 4)
IMAGE_BYTES = int(np.prod(IMAGE_SHAPE))
FIRST_INPUT_BYTES = 4 << 20  # a tile's bytes; a bigger tile gets a bigger block


def default_worker_count() -> int:
    """Workers beside the view: a core for the view and the GPU driver's thread, the rest (at most 4)."""
    return max(1, min(4, (os.cpu_count() or 2) - 1))


# ---------------------------------------------------------------------------------------- the worker
def _worker_main(conn, in_name: str, out_name: str, spec) -> None:
    """A worker's loop: messages in, results out (the module docstring)."""
    from multiprocessing import shared_memory

    from wowgrass.edit.adt_edit import read_tile
    from wowgrass.game.effects import GroundEffectCatalog
    from wowgrass.pools import run_in_background

    from .overlays import SetColours, cell_overlay, tile_grass_textures

    def attach(name):  # the parent's resource tracker (shared under spawn) already knows the block
        return shared_memory.SharedMemory(name=name)

    run_in_background()  # the frame's thread first where cores are short
    shm_in, shm_out = attach(in_name), attach(out_name)
    catalogs: dict = {}
    rules: dict = {}  # the rules file's version -> (plan, footprint context): rules_bench.py's jobs
    parsed: dict = {}  # (tile, session version) -> the parsed tile: a pick's next cells reuse its evaluation
    data = None
    try:
        while True:
            msg = conn.recv()
            if msg is None:
                return
            kind = msg[0]
            try:
                if kind == "input":  # a bigger input block
                    shm_in.close()
                    shm_in = attach(msg[1])
                elif kind == "tables":
                    _k, version, tex, dood, build, hint = msg
                    catalogs.clear()
                    catalogs[version] = GroundEffectCatalog.from_dbc_bytes(tex, dood, build, hint=hint)
                elif kind == "overlay":
                    _k, job, key, game_path, size, big_alpha, msb_first, tables_version, grass = msg
                    if size is None:  # the session has not read this tile: as the data holds it
                        if data is None:
                            data = spec.open()
                        raw = data.read(game_path)
                    else:
                        raw = bytes(shm_in.buf[:size])
                    tile = read_tile(raw, game_path, big_alpha=big_alpha, msb_first=msb_first)
                    cat = catalogs[tables_version]
                    mine = tile_grass_textures(tile, cat)
                    colours = SetColours()  # this tile's sets in the order met; the caller maps them to its own
                    img = cell_overlay(tile, key, cat, colours, set(grass) | mine)
                    np.frombuffer(shm_out.buf, np.uint8, IMAGE_BYTES)[:] = img.reshape(-1)
                    conn.send(("overlay", job, (list(colours.index), mine)))
                elif kind == "rules":  # a tile's rules overlay image or its drift (rules_bench.py)
                    from .rules_bench import worker_rules

                    _k, job, key, game_path, size, big_alpha, msb_first, args = msg
                    if data is None:
                        data = spec.open()
                    mine = (tuple(key), args.get("session_version"))
                    tile = parsed.get(mine) if mine[1] is not None else None
                    if tile is None:
                        if size is not None:
                            raw = bytes(shm_in.buf[:size])
                        elif args.get("file"):  # the loose file the view's data reads now (one new since
                            raw = Path(args["file"]).read_bytes()  # the worker listed the folders included)
                        else:
                            raw = data.read(game_path)
                        tile = read_tile(raw, game_path, big_alpha=big_alpha, msb_first=msb_first)
                        if mine[1] is not None:
                            if len(parsed) >= 4:
                                parsed.pop(next(iter(parsed)))
                            parsed[mine] = tile
                    img, found = worker_rules(rules, data, args, msb_first, tile, key)
                    if img is not None:
                        np.frombuffer(shm_out.buf, np.uint8, IMAGE_BYTES)[:] = img.reshape(-1)
                    conn.send(("rules", job, (args["what"], img is not None, found)))
                elif kind == "parse":  # a tile read and parsed here; its arrays back through a block of their own
                    _k, job, game_path, big_alpha, msb_first = msg
                    if data is None:
                        data = spec.open()
                    raw = data.read(game_path)
                    tile = read_tile(raw, game_path, big_alpha=big_alpha, msb_first=msb_first)
                    buffers: list = []
                    meta = pickle.dumps((tile, tile.cell_centres()), protocol=5, buffer_callback=buffers.append)
                    views = [memoryview(raw)] + [b.raw() for b in buffers]
                    sizes = [v.nbytes for v in views]
                    block = shared_memory.SharedMemory(create=True, size=max(1, sum(sizes)))
                    at = 0
                    for v, n in zip(views, sizes):
                        block.buf[at:at + n] = v.cast("B")
                        at += n
                    name = block.name
                    block.close()  # the caller unlinks it once copied out
                    conn.send(("parse", job, (name, meta, sizes)))
                elif kind == "audit":
                    from .findings import audit_findings

                    _k, job, map_name = msg
                    if data is None:
                        data = spec.open()
                    conn.send(("audit", job, audit_findings(data, map_name)))
            except Exception as exc:  # the job failed; the worker goes on
                conn.send(("error", msg[1] if len(msg) > 1 else None, f"{type(exc).__name__}: {exc}"))
    except (EOFError, KeyboardInterrupt):
        return
    finally:
        shm_in.close()
        shm_out.close()
        if data is not None:
            data.close()


# ---------------------------------------------------------------------------------------- the pool
@dataclass
class Job:
    kind: str  # "overlay" | "audit"
    key: object = None  # the tile
    version: tuple = ()  # (tile version, tables version) the job was made from
    raw: bytes | None = None  # the tile's bytes (None: the worker reads them from the data)
    attempts: int = 0
    id: int = 0
    args: dict = field(default_factory=dict)


class _Worker:
    def __init__(self, ctx, spec):
        from multiprocessing import shared_memory

        self.shm_in = shared_memory.SharedMemory(create=True, size=FIRST_INPUT_BYTES)
        self.shm_out = shared_memory.SharedMemory(create=True, size=IMAGE_BYTES)
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, self.shm_in.name, self.shm_out.name, spec),
                                name="wowgrass-workbench-worker", daemon=True)
        self.proc.start()
        child.close()
        self.tables_version = None
        self.job: Job | None = None

    def send_input(self, raw: bytes) -> int:
        from multiprocessing import shared_memory

        if len(raw) > self.shm_in.size:
            old = self.shm_in
            self.shm_in = shared_memory.SharedMemory(create=True, size=max(len(raw), 2 * old.size))
            self.conn.send(("input", self.shm_in.name))
            old.close()
            old.unlink()
        self.shm_in.buf[:len(raw)] = raw
        return len(raw)

    def image(self) -> np.ndarray:
        return np.frombuffer(self.shm_out.buf, np.uint8, IMAGE_BYTES).reshape(IMAGE_SHAPE).copy()

    def stop(self, timeout=2.0) -> None:
        try:
            self.conn.send(None)
        except (OSError, ValueError):
            pass
        self.proc.join(timeout)
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(timeout)
        self.release()

    def release(self) -> None:
        self.conn.close()
        for shm in (self.shm_in, self.shm_out):
            try:
                shm.close()
                shm.unlink()
            except (FileNotFoundError, BufferError):
                pass


class TileWorkers:
    """``n`` worker processes over ``session``'s map (see the module docstring). ``on_result(kind,
    job, payload)``: "overlay" with (image, effect ids in the worker's colour order, the tile's grass
    textures), "audit" with :func:`~.findings.audit_findings`' dict, "error" with a message."""

    def __init__(self, session, on_result, *, n: int | None = None):
        import multiprocessing as mp

        self.session = session
        self.on_result = on_result
        self.n = default_worker_count() if n is None else max(1, int(n))
        self._ctx = mp.get_context("spawn")  # never fork a process holding GL contexts and threads
        self._spec = session.data.spec()
        self._lock = threading.Lock()
        self._pending: deque = deque()
        self._ids = itertools.count(1)
        self._workers: list[_Worker] = []
        self._wake_r, self._wake_w = self._ctx.Pipe(duplex=False)
        self._closed = False
        self.restarts = 0  # workers started again after one died
        self._thread = None

    def _start(self):
        if self._thread is None:
            self._workers = [_Worker(self._ctx, self._spec) for _ in range(self.n)]
            self._thread = threading.Thread(target=self._loop, name="wowgrass-workbench-results", daemon=True)
            self._thread.start()

    @property
    def pids(self) -> list[int]:
        return [w.proc.pid for w in self._workers]

    @property
    def processes(self) -> list:
        """The worker processes now (multiprocessing.Process)."""
        return [w.proc for w in self._workers]

    @property
    def memory_names(self) -> list[str]:
        """The shared-memory blocks the workers use now (their names)."""
        return [shm.name for w in self._workers for shm in (w.shm_in, w.shm_out)]

    @property
    def busy(self) -> bool:
        with self._lock:
            return bool(self._pending) or any(w.job is not None for w in self._workers)

    def submit_overlay(self, key, grass_textures) -> Job:
        """The overlay of tile ``key`` as the session holds it now (its bytes, or the data's where it
        has not read the tile), with the map's grass textures known so far."""
        s = self.session
        if s.has_read(key):
            raw, version = s.tile_state(key)
        else:
            raw, version = None, s.tile_version(key)
        job = Job("overlay", key, (version, s.tables_version), raw, args={"grass": sorted(grass_textures)})
        return self._submit(job)

    def submit_rules(self, key, what: str, rules, **extra) -> Job:
        """Tile ``key``'s rules overlay image (``what`` "governing": the tile as the session holds
        it), its drift ("drift": the tile as its file on disk holds it) or a cell's why ("explain",
        with ``mcnk`` and ``cell``: as the session holds it), under ``rules`` (``RulesView.spec()``:
        version, path, text)."""
        from wowgrass.game.maps import adt_game_path

        s = self.session
        args = {"what": what, "rules": rules, "map": s.map_name, "file": None, **extra}
        if what != "drift" and s.has_read(key):
            raw, version = s.tile_state(key)
            args["session_version"] = version  # these bytes, as long as the tile is at this version
        else:
            raw, version = None, s.tile_version(key)
            found = s.data.locate(adt_game_path(s.map_name, *key)) if hasattr(s.data, "locate") else None
            if found is not None and found[1] is None:
                args["file"] = str(found[0])
        return self._submit(Job("rules", key, (version, s.tables_version), raw, args=args))

    def submit_parse(self, key) -> Job:
        """Tile ``key`` read from the data and parsed in a worker: ``on_result("parse", job,
        (bytes, AdtTile, cell centres))`` (for :meth:`EditSession.take_read`)."""
        return self._submit(Job("parse", key, (0, self.session.tables_version)))

    def submit_audit(self) -> Job:
        return self._submit(Job("audit"))

    def _submit(self, job: Job) -> Job:
        if self._closed:
            raise RuntimeError("the workers are closed")
        job.id = next(self._ids)
        with self._lock:
            self._start()
            self._pending.append(job)
        self._wake_w.send(b"")
        return job

    def close(self) -> None:
        """Stop the workers (each finishes or is terminated) and unlink their shared memory."""
        if self._closed:
            return
        self._closed = True
        try:
            self._wake_w.send(b"")
        except OSError:
            pass
        if self._thread is not None:
            self._thread.join(5.0)
        for w in self._workers:
            w.stop()
        self._workers = []
        self._wake_r.close()
        self._wake_w.close()

    # -- the pool's thread --
    def _dispatch(self) -> None:
        from wowgrass.game.maps import adt_game_path

        s = self.session
        with self._lock:
            for w in self._workers:
                if not self._pending:
                    return
                if w.job is not None:
                    continue
                job = self._pending.popleft()
                try:
                    if job.kind == "overlay":
                        tv = job.version[1]
                        if w.tables_version != tv:
                            from .session import TABLES

                            tex, dood = (s.tables_bytes(p) for p in TABLES)
                            w.conn.send(("tables", tv, tex, dood, s.tables_build, getattr(s.data, "build", None)))
                            w.tables_version = tv
                        size = w.send_input(job.raw) if job.raw is not None else None
                        w.conn.send(("overlay", job.id, job.key, adt_game_path(s.map_name, *job.key), size,
                                     s.big_alpha, s.msb_first, tv, job.args["grass"]))
                    elif job.kind == "parse":
                        w.conn.send(("parse", job.id, adt_game_path(s.map_name, *job.key), s.big_alpha, s.msb_first))
                    elif job.kind == "rules":
                        size = w.send_input(job.raw) if job.raw is not None else None
                        w.conn.send(("rules", job.id, job.key, adt_game_path(s.map_name, *job.key), size, s.big_alpha,
                                     s.msb_first, job.args))
                    else:
                        w.conn.send((job.kind, job.id, s.map_name) if job.kind == "audit" else (job.kind, job.id))
                    w.job = job
                except (OSError, ValueError):  # the worker is gone: _loop starts another
                    self._pending.appendleft(job)

    def _loop(self) -> None:
        from multiprocessing.connection import wait

        while not self._closed:
            self._dispatch()
            conns = {w.conn: w for w in self._workers}
            sentinels = {w.proc.sentinel: w for w in self._workers}
            ready = wait([self._wake_r, *conns, *sentinels])
            for r in ready:
                if r is self._wake_r:
                    try:
                        while self._wake_r.poll():
                            self._wake_r.recv_bytes()
                    except (EOFError, OSError):
                        return
                elif r in conns:
                    w = conns[r]
                    try:
                        msg = r.recv()
                    except (EOFError, OSError):
                        self._died(w)
                        continue
                    self._received(w, msg)
                elif r in sentinels:
                    w = sentinels[r]
                    try:
                        last = w.conn.poll()  # its last message first, if it sent one before it went
                    except (EOFError, OSError):
                        last = False
                    if w in self._workers and not last:
                        self._died(w)

    def _received(self, w: _Worker, msg) -> None:
        kind, _job_id, payload = msg
        job, w.job = w.job, None
        if kind == "overlay":
            ids, mine = payload
            self.on_result("overlay", job, (w.image(), ids, mine))
        elif kind == "audit":
            self.on_result("audit", job, payload)
        elif kind == "parse":
            try:
                got = take_parsed(*payload)
            except Exception as exc:  # the block went missing: said, the tile is read where it is needed
                self.on_result("error", job, f"{type(exc).__name__}: {exc}")
                return
            self.on_result("parse", job, got)
        elif kind == "rules":
            what, has_image, found = payload
            self.on_result("rules", job, (what, w.image() if has_image else None, found))
        else:
            self.on_result("error", job, payload)

    def _died(self, w: _Worker) -> None:
        """A worker died: another in its place, its job once more (twice dead: reported)."""
        with self._lock:
            if w not in self._workers:
                return
            i = self._workers.index(w)
            job = w.job
            w.release()
            if self._closed:
                return
            self._workers[i] = _Worker(self._ctx, self._spec)
            self.restarts += 1
            if job is not None:
                job.attempts += 1
                if job.attempts < 2:
                    self._pending.appendleft(job)
                    job = None
        if job is not None:
            self.on_result("error", job, f"a worker died twice on {job.kind} {job.key}")


def take_parsed(name: str, meta: bytes, sizes: list):
    """(bytes, AdtTile, cell centres) from a worker's block ``name`` (its bytes first, then the
    arrays' buffers, ``sizes`` each): copied out in one piece (numpy's copy, which lets go of the
    GIL while it copies megabytes), the block unlinked."""
    from multiprocessing import shared_memory

    block = shared_memory.SharedMemory(name=name)
    try:
        total = sum(sizes)
        data = np.empty(total, np.uint8)
        mapped = np.frombuffer(block.buf, np.uint8, total)
        np.copyto(data, mapped)
        del mapped  # the block's buffer no longer exported: it can close
    finally:
        block.close()
        block.unlink()
    view = memoryview(data)
    raw = bytes(view[:sizes[0]])
    parts, at = [], sizes[0]
    for n in sizes[1:]:
        parts.append(view[at:at + n])
        at += n
    tile, centres = pickle.loads(meta, buffers=parts)
    return raw, tile, centres


def map_overlay(img: np.ndarray, effect_ids, colours) -> np.ndarray:
    """A worker's overlay image with its own colour indices (R: the index of the tile's sets in
    ``effect_ids`` order, + 1) given ``colours``' (the window's SetColours, which learns the ids
    it had not met in the same order an in-thread computation would)."""
    out = img.copy()
    if len(effect_ids):
        glob = colours.of(np.asarray(effect_ids, np.int64))
        lut = np.zeros(256, np.uint8)
        lut[1:len(glob) + 1] = (glob % 255 + 1).astype(np.uint8)
        out[..., 0] = lut[img[..., 0]]
    return out
