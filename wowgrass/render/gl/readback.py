"""CPU reads of GPU-written buffers (statistics, tests, validation), always through a GPU copy.

A buffer the CPU reads directly (``glGetBufferSubData``) can be moved by the driver into host
memory for good: on the H200, after one read-back of the grass culling's buffers every later
frame ran its compute atomics, indirect commands and instance fetches from them at bus speed, and
the CPU waited for the GPU in each frame (the sample zone's grass view went from about 3 to 5 ms).
Copying the range into a scratch buffer on the GPU and reading that leaves the hot buffer where
it is. Callers order the shader writes before the copy with ``GL_BUFFER_UPDATE_BARRIER_BIT``."""
from __future__ import annotations

BUFFER_UPDATE_BARRIER = 0x200  # GL_BUFFER_UPDATE_BARRIER_BIT: shader writes before buffer copies/reads


def read_buffer(ctx, buffer, size: int | None = None, offset: int = 0) -> bytes:
    """``size`` bytes of ``buffer`` from ``offset`` (default: to its end), read through a copy
    into a scratch buffer made for this read (:class:`Readback` keeps one for repeated reads)."""
    rb = Readback(ctx)
    try:
        return rb.read(buffer, size, offset)
    finally:
        rb.release()


class Readback:
    """One owner's scratch buffer for reads through a copy (a source's statistics every frame with
    ``--stats``), grown as needed and released with its owner: its lifetime is the owner's, in the
    owner's context. (A scratch cached per context, for as long as the process ran, read stale
    bytes in the tests: another context had been created and released meanwhile, which leaves no
    usable context current: the later calls went to the released context, where the scratch's
    name meant nothing.)"""

    def __init__(self, ctx):
        self.ctx = ctx
        self._scratch = None

    def read(self, buffer, size: int | None = None, offset: int = 0) -> bytes:
        if size is None:
            size = buffer.size - offset
        if size <= 0:
            return b""
        ctx = self.ctx
        ctx.memory_barrier(BUFFER_UPDATE_BARRIER)
        if self._scratch is None or self._scratch.size < size:
            self.release()
            from .memory import gpu_memory

            self._scratch = gpu_memory(ctx).track(ctx.buffer(reserve=max(size, 4096)), "frame")
        ctx.copy_buffer(self._scratch, buffer, size=size, read_offset=offset)
        return self._scratch.read(size)

    def release(self):
        if self._scratch is not None:
            self._scratch.release()
            self._scratch = None
