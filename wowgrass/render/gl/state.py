"""GL state the renderer sets every frame, skipped when it is already so.

On the lent H200 host a GL call through moderngl costs 0.5-8 µs of CPU and a frame of the
GPU-driven grass made ~25 of them (docs/view.md); most set what the last frame set. These helpers
remember what they set, so a frame in which nothing changed makes none of those calls. They are
only right while every set of that state goes through them: uniforms of the renderer's programs
(:func:`set_uniform`), storage-buffer and uniform-block binding points, texture units and the
enable flags, in every module of :mod:`wowgrass.render`.
"""

from __future__ import annotations

_UNSET = object()

ALPHA_TO_COVERAGE = 0x809E  # GL_SAMPLE_ALPHA_TO_COVERAGE (moderngl's enable flags lack it: *_direct)
# glMemoryBarrier bits of the compute culling passes: results read by the next compute pass
# (SSBO); before the draws also as indirect commands and instance attributes. Buffer reads of
# shader results (statistics, tests) go through render.readback, which adds BUFFER_UPDATE: on the
# H200 that bit in every frame cost the multisampled sample zone about 2 ms of GPU time.
SSBO_BARRIER = 0x2000
DRAW_BARRIER = 0x2000 | 0x40 | 0x1  # SSBO | COMMAND | VERTEX_ATTRIB_ARRAY


def set_uniform(prog, name: str, value) -> None:
    """Set ``prog``'s uniform ``name`` unless it holds ``value`` already. The last values live on
    the program, so every source sharing a program shares the record (two sources setting the
    same program's uniform in turn both get their sets). ``value``: what moderngl's ``.value``
    takes (numbers, tuples; not numpy arrays), or ``bytes`` for the uniform's raw data. Each
    actual write counts in :func:`uniform_serial`."""
    last = getattr(prog, "_set_uniforms", None)
    if last is None:
        last = prog._set_uniforms = {}
    if last.get(name, _UNSET) == value:
        return
    u = prog.get(name, None)
    if u is None:  # optimised out of this variant
        return
    last[name] = value
    prog._set_serial = getattr(prog, "_set_serial", 0) + 1
    if isinstance(value, bytes):
        u.write(value)
    else:
        u.value = value


def uniform_serial(prog) -> int:
    """How many uniform writes :func:`set_uniform` made on ``prog``: a caller that set a batch of
    uniforms and recorded this can skip the whole batch later while it is unchanged (no one else
    wrote any)."""
    return getattr(prog, "_set_serial", 0)


def bind_storage(ctx, buffers, first: int = 0) -> None:
    """Bind ``buffers`` (a tuple) to shader storage binding points ``first``, ``first + 1``, ...
    (``None``: leave that point alone) unless each is bound there already. Records are per context
    and hold the buffer objects themselves: a released buffer's GL name may be handed out again,
    an object is never."""
    bound = getattr(ctx, "_storage_bound", None)
    end = first + len(buffers)
    if bound is None or len(bound) < end:
        bound = ctx._storage_bound = (bound or []) + [None] * (end - len(bound or ()))
    if tuple(bound[first:end]) == buffers:  # moderngl buffers compare by identity: one C-level pass
        return
    for i, buf in enumerate(buffers, first):
        if buf is not None and bound[i] is not buf:
            buf.bind_to_storage_buffer(i)
            bound[i] = buf


def bind_uniform_block(ctx, buffer, binding: int, offset: int, size: int) -> None:
    """``buffer``'s range ``[offset, offset + size)`` to uniform block binding ``binding``, unless
    bound so already."""
    bound = getattr(ctx, "_uniform_bound", None)
    if bound is None:
        bound = ctx._uniform_bound = {}
    key = (buffer, offset, size)
    old = bound.get(binding)
    if old is None or old[0] is not buffer or old[1:] != key[1:]:
        buffer.bind_to_uniform_block(binding, offset=offset, size=size)
        bound[binding] = key


def use_texture(ctx, texture, unit: int) -> None:
    """``texture`` on texture unit ``unit`` unless it is there already (moderngl's own texture
    work, creating and writing, goes through a unit of its own and leaves these alone)."""
    bound = getattr(ctx, "_textures_bound", None)
    if bound is None:
        bound = ctx._textures_bound = {}
    if bound.get(unit) is not texture:
        texture.use(location=unit)
        bound[unit] = texture


def enable_only(ctx, flags: int) -> None:
    """``ctx.enable_only(flags)`` unless exactly those are on (as this module last set them)."""
    if getattr(ctx, "_enabled_flags", None) != flags:
        ctx.enable_only(flags)
        ctx._enabled_flags = flags


def enable(ctx, flags: int) -> None:
    """``ctx.enable(flags)``, kept in :func:`enable_only`'s record."""
    ctx.enable(flags)
    on = getattr(ctx, "_enabled_flags", None)
    if on is not None:
        ctx._enabled_flags = on | flags


def disable(ctx, flags: int) -> None:
    """``ctx.disable(flags)``, kept in :func:`enable_only`'s record."""
    ctx.disable(flags)
    on = getattr(ctx, "_enabled_flags", None)
    if on is not None:
        ctx._enabled_flags = on & ~flags
