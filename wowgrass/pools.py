"""Pools of worker processes that stop on Ctrl-C: the one way every command that fans out runs one.

The workers ignore SIGINT (Ctrl-C reaches the whole process group: the parent stops them, so none
prints a traceback of its own) and are started with SIGINT and SIGTERM blocked, which they inherit,
so a signal while one starts up is not taken before it has set that up. A signal, or any error, in
the parent ends the workers at once (not after the work queued); the data each opens is handed
as ``GameData.spec()`` (see :mod:`wowgrass.game.data`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
# How much nicer than the view a process working beside it runs (the workbench's tile workers, the
# scene's tile process): on a machine with no core to spare the frame's thread is scheduled first.
BACKGROUND_NICE = 5


def run_in_background(step: int = BACKGROUND_NICE) -> None:
    """Make this process ``step`` nicer than it is (where the system lets a process do so)."""
    try:
        os.nice(step)
    except (AttributeError, OSError):  # no nice() (Windows), or not allowed: run as before
        pass


def init_worker(initializer=None, *args) -> None:
    """A worker's start: Ctrl-C ignored, SIGTERM ends it, the signals the parent blocked unblocked."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)   # not the parent's handler, inherited by fork
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    if initializer is not None:
        initializer(*args)


@contextlib.contextmanager
def signals_held():
    """SIGINT and SIGTERM held over the body and taken after it: blocked in this thread (the workers
    started here inherit that) and, should another thread receive one, recorded rather than raised
    half-way through starting a worker (one that the pool never recorded would be left running)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    old = {s: signal.signal(s, lambda signum, frame: got.append(signum)) for s in STOP_SIGNALS}
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        for s, handler in old.items():
            signal.signal(s, handler)
        if got:   # as if it came now
            handler = old[got[0]]
            if callable(handler):
                handler(got[0], None)
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), got[0])


@contextlib.contextmanager
def worker_pool(jobs: int, initializer=None, initargs=(), *, mp_context=None):
    """A ProcessPoolExecutor of ``jobs`` workers set up by :func:`init_worker`; submit through
    :func:`map_in` (or inside :func:`signals_held`). An exception or a signal in the body stops
    the workers at once."""
    pool = ProcessPoolExecutor(jobs, mp_context=mp_context, initializer=init_worker,
                               initargs=(initializer, *initargs))
    try:
        yield pool
        pool.shutdown(wait=True)
    except BaseException:   # Ctrl-C in the body or while the last tasks finish
        stop_pool(pool)
        raise


def map_in(pool, fn, items, **kw):
    """``pool.map``, its workers started with the stop signals held (they start at the first submit)."""
    with signals_held():
        return pool.map(fn, items, **kw)


def stop_pool(pool) -> None:
    """End the workers now (SIGTERM, then SIGKILL after a second) and the pool without waiting."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for p in procs:
        try:
            p.terminate()
        except (OSError, AttributeError):
            pass
    deadline = time.monotonic() + 1.0
    for p in procs:
        try:
            p.join(max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                p.kill()
                p.join(0.5)
        except (OSError, AssertionError, ValueError):
            pass
    manager = getattr(pool, "_executor_manager_thread", None)  # shutdown forgets it
    try:
        pool.shutdown(wait=False, cancel_futures=True)
    except Exception:  # a pool stopped half-way through its start
        pass
    if manager is not None:
        # Let the pool's manager thread finish its clean-up, then take it off the list that
        # concurrent.futures wakes at interpreter exit: waking it through the pipe it already
        # closed printed "Exception ignored ... Bad file descriptor" after a quick SIGTERM.
        manager.join(1.0)
        if manager.is_alive():
            # a worker ended half-way through sending a result: the manager waits for the rest of
            # it, and the interpreter's exit for the manager, forever. Closing the last write end
            # (this process's) gives it end-of-file: the pool is broken, and it ends.
            try:
                manager.result_queue._writer.close()   # the pool forgot its queue in shutdown()
            except (AttributeError, OSError):
                pass
            manager.join(1.0)
        if not manager.is_alive():
            from concurrent.futures import process as futures_process

            getattr(futures_process, "_threads_wakeups", {}).pop(manager, None)


__all__ = ["STOP_SIGNALS", "init_worker", "map_in", "signals_held", "stop_pool", "worker_pool"]
