"""GPU frame times and a bound on frames in flight, without stalling the CPU on a query.

Reading a timer query right after its frame waits for the GPU to finish that frame, so the CPU
and the GPU take turns and a frame costs CPU + GPU time. Here each frame gets a
``GL_TIME_ELAPSED`` query and, after it, a fence. At most ``lag`` frames are in flight: ending a
frame waits on the *fence* of the oldest one beyond that (``glClientWaitSync``, the way a swap
chain bounds a queue), and a query is read only once its fence has signalled, so reading it never
blocks. Waiting on the query itself instead cost 0.3-0.6 ms a frame on the lent H200 from 16M
resident instances on (docs/view.md), while a fence wait at the same depth cost nothing.

moderngl exposes neither sync objects nor ``GL_QUERY_RESULT_AVAILABLE``, so the few entry points
come from the system's GL library through ctypes (:mod:`.native`). Where that library is not
found, the timer falls back to moderngl queries read ``lag`` frames late (the read then blocks when the GPU is further behind). Times come back tagged
with the index of the frame they measured.
"""

from __future__ import annotations

import ctypes
from collections import deque

from .native import native_gl

GL_TIME_ELAPSED = 0x88BF
GL_QUERY_RESULT = 0x8866
GL_SYNC_GPU_COMMANDS_COMPLETE = 0x9117
GL_SYNC_FLUSH_COMMANDS_BIT = 0x1
GL_ALREADY_SIGNALED, GL_TIMEOUT_EXPIRED, GL_CONDITION_SATISFIED, GL_WAIT_FAILED = 0x911A, 0x911B, 0x911C, 0x911D
WAIT_STEP_NS = 100_000_000  # one wait call; a lost context still returns


def _ms(ns: int) -> float:
    # moderngl reads the result as 32 bits: a saturated value (> 4.29 s) is unknown
    return ns / 1e6 if 0 <= ns < 0xFFFFFFFF else float("nan")


class GpuTimer:
    def __init__(self, ctx, lag: int = 2, *, fences: bool | None = None):
        """``lag``: frames allowed in flight (at least 1); ``fences``: None picks fences where the
        system library has them, False forces the moderngl fallback."""
        self.ctx = ctx
        self.lag = max(int(lag), 1)
        self.gl = native_gl() if fences is not False else None
        self._pending: deque = deque()  # (frame, query, fence or None); oldest first
        self._free: list = []  # query objects to reuse
        self._current = None
        self.frame = 0  # index of the next frame to begin

    @property
    def uses_fences(self) -> bool:
        return self.gl is not None

    def begin(self) -> int:
        """Start timing frame ``self.frame`` (returned)."""
        if self.gl is not None:
            q = self._free.pop() if self._free else self._gen()
            self.gl.glBeginQuery(GL_TIME_ELAPSED, q)
        else:
            q = self._free.pop() if self._free else self.ctx.query(time=True)
            q.mglo.begin()
        self._current = q
        return self.frame

    def end(self) -> list[tuple[int, float]]:
        """End the current frame; waits while more than ``lag`` frames are in flight, then returns
        ``(frame, gpu_ms)`` of every finished frame not reported yet."""
        q, self._current = self._current, None
        if self.gl is not None:
            self.gl.glEndQuery(GL_TIME_ELAPSED)
            fence = self.gl.glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0)
        else:
            q.mglo.end()
            fence = None
        self._pending.append((self.frame, q, fence))
        self.frame += 1
        out = []
        while len(self._pending) > self.lag:
            out.append(self._read_oldest(wait=True))
        while self._pending and self._done(self._pending[0]):
            out.append(self._read_oldest(wait=False))
        return out

    def drain(self) -> list[tuple[int, float]]:
        """Read every frame still in flight (waits for the GPU)."""
        out = []
        while self._pending:
            out.append(self._read_oldest(wait=True))
        return out

    def release(self):
        self.drain()
        if self.gl is not None and self._free:
            ids = (ctypes.c_uint * len(self._free))(*self._free)
            self.gl.glDeleteQueries(len(self._free), ids)
        self._free.clear()

    # -- internals --
    def _gen(self) -> int:
        q = ctypes.c_uint(0)
        self.gl.glGenQueries(1, ctypes.byref(q))
        return q.value

    def _done(self, entry) -> bool:
        """Whether a pending frame finished (a zero-timeout fence test; never blocks)."""
        fence = entry[2]
        if fence is None:  # the fallback reads only what is ``lag`` frames old
            return False
        return self.gl.glClientWaitSync(fence, 0, 0) in (GL_ALREADY_SIGNALED, GL_CONDITION_SATISFIED)

    def _read_oldest(self, wait: bool) -> tuple[int, float]:
        frame, q, fence = self._pending.popleft()
        if fence is None:
            ms = _ms(q.elapsed)
        else:
            while wait and self.gl.glClientWaitSync(fence, GL_SYNC_FLUSH_COMMANDS_BIT, WAIT_STEP_NS) not in (
                    GL_ALREADY_SIGNALED, GL_CONDITION_SATISFIED, GL_WAIT_FAILED):
                pass
            self.gl.glDeleteSync(fence)
            ns = ctypes.c_uint64(0)
            self.gl.glGetQueryObjectui64v(q, GL_QUERY_RESULT, ctypes.byref(ns))
            ms = ns.value / 1e6
        self._free.append(q)
        return frame, ms
