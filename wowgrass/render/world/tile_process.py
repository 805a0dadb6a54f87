"""A tile process: the streaming scene's tiles prepared in a process of their own.

Preparing a tile (reading it, parsing it, baking or reading its bundle, building its arrays) is
Python. In the scene's worker thread it shares the GIL with the frame's thread: on the H200 the
ocean flights at 150 units/s had frames 2.3-2.7x the median, the slowest ones waiting for the
worker (benchmarks/bench_stream_cpu.py shows it without a GPU). Here a process of its own, with a
source of its own opened from the same data (:meth:`GameSource.worker_spec`), prepares each
tile the worker thread asks for; the thread only waits on a pipe and takes the arrays in (numpy
buffers sent out of band, pickle protocol 5, no copy into the pickle). Models and liquid frames
are loaded in the viewer's process as before: once each, shared by every tile.

The process starts with the scene; until it is ready, and if it dies, the thread prepares tiles
itself (the first tiles of a start-up need not wait for the process's imports).
"""

from __future__ import annotations

import logging
import os
import pickle
import signal
import socket
import subprocess
import sys
import traceback
from multiprocessing.connection import Connection

from wowgrass.errors import WowgrassError

log = logging.getLogger(__name__)


class TileProcessGone(Exception):
    """The tile process exited (killed, out of memory) or could not start."""


def _portable(exc: BaseException) -> BaseException:
    """``exc`` as it can cross the pipe: itself where it pickles and unpickles, else a
    WowgrassError with its message."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return WowgrassError(f"{type(exc).__name__}: {exc}")


def send_payload(conn, payload) -> None:
    """A payload over ``conn``: a header (sizes), the pickle, then each array buffer as it is."""
    buffers = []
    head = pickle.dumps(payload, protocol=5, buffer_callback=buffers.append)
    views = [b.raw() for b in buffers]
    conn.send(("payload", [v.nbytes for v in views]))
    conn.send_bytes(head)
    for v in views:
        conn.send_bytes(v)


def receive_payload(conn, sizes) -> dict:
    """What :func:`send_payload` sent (after its header): arrays backed by buffers of their own."""
    head = conn.recv_bytes()
    buffers = []
    for size in sizes:
        buf = bytearray(size)
        conn.recv_bytes_into(buf)
        buffers.append(buf)
    return pickle.loads(head, buffers=buffers)


def serve(conn) -> None:
    """The tile process: take the source's spec and the options, open the source, say ready,
    prepare each (key, full) asked for until None or the pipe closes. A tile's error goes back
    as the error (the viewer reports it)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the viewer's: it stops this process
    from wowgrass.pools import run_in_background
    run_in_background()  # the frame's thread first where cores are short
    try:
        spec, options = conn.recv()
    except (EOFError, OSError):
        return
    from .game_tiles import GameSource
    from .tile_payload import prepare_payload

    try:
        source = GameSource.from_spec(spec)
        source.with_frames = False  # the viewer decodes the liquid frames, once
    except BaseException as exc:
        conn.send(("failed", f"{type(exc).__name__}: {exc}"))
        return
    conn.send(("ready",))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        key, full = msg
        if hasattr(source.data, "refresh"):  # the loose folders as they are now (a watched file removed:
            source.data.refresh()            # the layer below answers), as the viewer's own data after a reload
        mark = source.notes_mark()
        try:
            payload = prepare_payload(source, key, full, **options)
        except WowgrassError as exc:
            conn.send(("error", _portable(exc), source.notes_since(mark, key)))
            continue
        except Exception as exc:  # a bug: the viewer logs its traceback
            conn.send(("bug", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}",
                       source.notes_since(mark, key)))
            continue
        payload["notes"] = source.notes_since(mark, key)
        send_payload(conn, payload)


class TileProcess:
    """The parent's side: :meth:`ready` (never blocks), :meth:`prepare` (one tile, blocks the
    calling thread on the pipe, not on the GIL), :meth:`close`."""

    def __init__(self, spec: dict, options: dict):
        # a fresh interpreter (not fork: the parent holds a GL context and threads; not
        # multiprocessing's spawn: it would run the caller's main script again)
        ours, theirs = socket.socketpair()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        try:
            self._proc = subprocess.Popen([sys.executable, "-m", __name__, str(theirs.fileno())],
                                          pass_fds=(theirs.fileno(),), env=env, stdin=subprocess.DEVNULL)
        finally:
            theirs.close()
        self._conn = Connection(ours.detach())
        self._conn.send((spec, options))
        self._ready = False
        self.failed: str | None = None
        self.tiles = 0  # prepared here

    @property
    def pid(self) -> int:
        """The process's id."""
        return self._proc.pid

    def ready(self) -> bool:
        """True once the process has opened its source (False while it starts, or if it failed)."""
        if self._ready or self.failed:
            return self._ready
        try:
            if not self._conn.poll():
                return False
            msg = self._conn.recv()
        except (EOFError, OSError) as exc:
            self.failed = f"exited before it was ready ({type(exc).__name__})"
            return False
        if msg[0] == "ready":
            self._ready = True
        else:
            self.failed = msg[1]
            log.info("tile process: %s (tiles are prepared in the viewer's process)", self.failed)
        return self._ready

    def prepare(self, key, full: bool, take_notes) -> dict:
        """The payload of one tile; ``take_notes`` gets the reports loading it made (bakes, WMOs
        missing, ...) whether it loaded or not. Raises the tile's error, or TileProcessGone."""
        try:
            self._conn.send((tuple(key), bool(full)))
            msg = self._conn.recv()
            if msg[0] == "payload":
                payload = receive_payload(self._conn, msg[1])
        except Exception as exc:  # exited, or the pipe no longer in step: not used again
            self.failed = f"exited ({type(exc).__name__}, exit code {self._proc.poll()})"
            raise TileProcessGone(self.failed) from None
        if msg[0] == "payload":
            self.tiles += 1
            take_notes(payload.pop("notes"))
            return payload
        kind, err, notes = msg
        take_notes(notes)
        raise RuntimeError(f"in the tile process: {err}") if kind == "bug" else err

    def close(self, timeout: float = 2.0) -> None:
        """Ask the process to stop, wait up to ``timeout`` seconds, then terminate it."""
        try:
            self._conn.send(None)
        except (OSError, ValueError):
            pass
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._proc.terminate()
            try:
                self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._conn.close()


if __name__ == "__main__":
    serve(Connection(int(sys.argv[1])))
