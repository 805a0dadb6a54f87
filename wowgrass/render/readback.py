"""CPU reads of GPU-written buffers (statistics, tests, validation), always through a GPU copy.

A buffer the CPU reads directly (``glGetBufferSubData``) can be moved by the driver into host
memory for good: on the H200, after one read-back of the grass culling's buffers every later
frame ran its compute atomics, indirect commands and instance fetches from them at bus speed, and
the CPU waited for the GPU in each frame (the sample zone's grass view went from about 3 to 5 ms).
Copying the range into a scratch buffer on the GPU and reading that leaves the hot buffer where
it is. Callers order the shader writes before the copy with ``GL_BUFFER_UPDATE_BARRIER_BIT``."""
from __future__ import annotations

import weakref

BUFFER_UPDATE_BARRIER = 0x200  # GL_BUFFER_UPDATE_BARRIER_BIT: shader writes before buffer copies/reads


def read_buffer(ctx, buffer, size: int | None = None, offset: int = 0) -> bytes:
    """``size`` bytes of ``buffer`` from ``offset`` (default: to its end), read through a copy."""
    if size is None:
        size = buffer.size - offset
    if size <= 0:
        return b""
    ctx.memory_barrier(BUFFER_UPDATE_BARRIER)
    scratch = _scratch.get(ctx)
    if scratch is None or scratch.size < size:  # one per context, grown as needed (--stats reads every frame)
        if scratch is not None:
            scratch.release()
        scratch = _scratch[ctx] = ctx.buffer(reserve=max(size, 4096))
    ctx.copy_buffer(scratch, buffer, size=size, read_offset=offset)
    return scratch.read(size)


_scratch: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
