"""GPU frame times without stalling the CPU: a ring of ``GL_TIME_ELAPSED`` queries.

Reading a timer query right after its frame waits for the GPU to finish that frame, so the CPU
and the GPU take turns and a frame costs CPU + GPU time. Here each frame has its own query, and a
query is read only ``lag`` frames after it ended (moderngl exposes no non-blocking
``GL_QUERY_RESULT_AVAILABLE``; a query issued two frames earlier is normally done). The read
still blocks when the GPU is more than ``lag`` frames behind, which bounds the frames in flight
the way a swap chain does. Times come back tagged with the index of the frame they measured.
"""

from __future__ import annotations

from collections import deque


def _ms(ns: int) -> float:
    # moderngl reads the result as 32 bits: a saturated value (> 4.29 s) is unknown
    return ns / 1e6 if 0 <= ns < 0xFFFFFFFF else float("nan")


class GpuTimer:
    def __init__(self, ctx, lag: int = 2):
        self.lag = max(int(lag), 0)
        self._queries = [ctx.query(time=True) for _ in range(self.lag + 1)]
        self._pending: deque = deque()  # (frame, query) ended, not read yet; oldest first
        self.frame = 0  # index of the next frame to begin

    def begin(self) -> int:
        """Start timing frame ``self.frame`` (returned)."""
        q = self._queries[self.frame % len(self._queries)]
        while self._pending and self._pending[0][1] is q:  # its last use is still unread
            self._read_oldest()
        q.mglo.begin()
        return self.frame

    def end(self) -> list[tuple[int, float]]:
        """End the current frame; returns ``(frame, gpu_ms)`` of frames at least ``lag`` behind."""
        q = self._queries[self.frame % len(self._queries)]
        q.mglo.end()
        self._pending.append((self.frame, q))
        self.frame += 1
        out = []
        while self._pending and self._pending[0][0] <= self.frame - 1 - self.lag:
            out.append(self._read_oldest())
        return out

    def drain(self) -> list[tuple[int, float]]:
        """Read every frame still in flight (waits for the GPU)."""
        out = []
        while self._pending:
            out.append(self._read_oldest())
        return out

    def _read_oldest(self) -> tuple[int, float]:
        frame, q = self._pending.popleft()
        return frame, _ms(q.elapsed)
