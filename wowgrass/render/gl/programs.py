"""Shader programs: ``.glsl`` package data loaded by name, with ``#define`` and ``#include``.

Each program is one file in ``wowgrass/render/shaders/`` holding ``VERTEX_SHADER`` and
``FRAGMENT_SHADER`` sections (moderngl-window's single-file convention)::

    #version 330 core
    #include "sway.glsl"          // textual include, resolved from the same folder, once per stage
    #if defined VERTEX_SHADER
    ...
    #elif defined FRAGMENT_SHADER
    ...
    #endif

The loader inserts ``#define VERTEX_SHADER`` (or ``FRAGMENT_SHADER``), the constants of
:data:`wowgrass.render.constants.SHADER_DEFINES` and any caller defines right after ``#version``.
Shared snippets (the wind sway, fog) live in their own files so that later passes (a shadow pass
with wind-matched shadows, a GPU culling compute shader) include the same code.
On a compile error the numbered source of the failing stage is part of the raised error.
"""

from __future__ import annotations

import re
import weakref
from importlib import resources

from wowgrass.errors import WowgrassError

from ..constants import SHADER_DEFINES, wind_defines

DEFAULT_INSTANCE_LAYOUT = "16p"  # see make_programs; measured in benchmarks/bench_render.py --variants
LOOKS = ("default", "client")  # grass looks (make_programs; view --look)

MANIFEST = {
    # program name -> file; the one list of programs the renderer uses
    "terrain": "terrain.glsl",
    "horizon": "horizon.glsl",  # the WDL beyond the terrain (sources/horizon.py)
    "grass": "grass.glsl",
    "doodad": "doodad.glsl",
    "grass_cull": "grass_cull.glsl",  # compute (GL 4.3): GPU-driven grass culling
    "grass_grid": "grass.glsl",  # with GRASS_GRID (constants.GRID_DEFINES): the camera-grid path
    "grass_grid_compact": "grass.glsl",  # the same, drawing the compacted blades (GRID_COMPACT)
    "grass_grid_cull": "grass_grid_cull.glsl",  # compute (GL 4.3): the camera grid's compaction pass
    "liquid": "liquid.glsl",  # water, ocean, magma, slime surfaces (render/sources/liquids.py)
    "wmo": "wmo.glsl",  # WMO groups, instanced (render/sources/wmo.py)
    "wmo_cull": "wmo_cull.glsl",  # compute (GL 4.3): WMO placements culled per view
    "sky": "sky.glsl",  # the light tables' sky behind everything (render/sources/sky.py, view --clock)
}

# uniforms that never change, set once at link time: texture units, the alpha-test reference
# (0.5; alpha to coverage sharpens around it), terrain texture repeats per chunk
SHADOW_UNIT = 7  # texture unit of the sun's shadow map in colour passes (shadow.glsl)
HEIGHT_UNIT = 4  # texture unit of the procedural meadow's heightmap (heightfield.glsl)
MODEL_UNIT = 5  # texture unit of the camera grid's model table (grid_slot.glsl)
CELLS_UNIT = 3  # texture unit of the terrain's per-cell overlays (terrain.glsl uCells)
LINK_TIME_UNIFORMS = {"uTexture": 0, "uLayers": 0, "uTextures": 0, "uFrames": 0, "uDepthMaps": 2, "uAlpha": 1, "uFarColour": 1, "uAlphaRef": 0.5, "uTexRepeat": 8.0,
                      "uGridControl": 1, "uGridHeights": 2, "uGridTiles": 3, "uCells": CELLS_UNIT, "uGridModels": MODEL_UNIT,
                      "uShadowMap": SHADOW_UNIT, "uHeight": HEIGHT_UNIT,
                      "uHorizonMask": 6}

FRAME_BLOCK_BYTES = 528  # std140 size of shaders/frame.glsl's block (render/frame.py lays it out)

_INCLUDE = re.compile(r'^\s*#include\s+"([^"]+)"\s*$', re.M)
_STAGES = ("VERTEX_SHADER", "FRAGMENT_SHADER", "GEOMETRY_SHADER", "COMPUTE_SHADER")


class ShaderError(WowgrassError):
    """A shader failed to compile or link (the message carries the numbered source)."""


def read_source(name: str) -> str:
    """The text of ``shaders/<name>`` (package data)."""
    try:
        return resources.files("wowgrass.render").joinpath("shaders", name).read_text("utf-8")
    except FileNotFoundError as exc:
        raise ShaderError(f"shader file not found: shaders/{name}") from exc


def _resolve_includes(src: str, seen: set[str]) -> str:
    def sub(m: re.Match) -> str:
        inc = m.group(1)
        if inc in seen:  # include guard: each snippet once per stage
            return f"// (already included: {inc})"
        seen.add(inc)
        return f"// begin {inc}\n{_resolve_includes(read_source(inc), seen)}\n// end {inc}"

    return _INCLUDE.sub(sub, src)


def _fmt(value) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        text = repr(value)
        return text if ("." in text or "e" in text) else text + ".0"
    return str(value)


def preprocess(name: str, stage: str, defines: dict | None = None) -> str:
    """Return the GLSL for one stage of program file ``name``: defines injected, includes resolved."""
    return preprocess_source(read_source(name), stage, defines, name=name)


def preprocess_source(src: str, stage: str, defines: dict | None = None, *, name: str = "<source>") -> str:
    """:func:`preprocess` for GLSL text (tests and tools build small programs around the includes)."""
    lines = src.splitlines()
    if not lines or not lines[0].startswith("#version"):
        raise ShaderError(f"shaders/{name}: the first line must be #version")
    head = [lines[0], f"#define {stage} 1"]
    merged = dict(SHADER_DEFINES)
    merged.update(defines or {})
    head += [f"#define {k} {_fmt(v)}" for k, v in merged.items() if v is not None and v is not False]
    body = _resolve_includes("\n".join(lines[1:]), set())
    return "\n".join(head) + "\n" + body + "\n"


def numbered(source: str) -> str:
    return "\n".join(f"{i:4d}: {line}" for i, line in enumerate(source.splitlines(), 1))


def stages_of(name: str) -> list[str]:
    text = _resolve_includes(read_source(name), set())
    return [s for s in _STAGES if re.search(rf"defined\s*\(?\s*{s}\b", text)]


def load_program(ctx, name: str, defines: dict | None = None, *, cache: dict | None = None):
    """Compile and link program ``name`` (a :data:`MANIFEST` key or a file name) on ``ctx``."""
    fname = MANIFEST.get(name, name)
    key = (fname, tuple(sorted((defines or {}).items())))
    if cache is not None and key in cache:
        return cache[key]
    stages = stages_of(fname)
    sources = {s: preprocess(fname, s, defines) for s in stages}
    kw = {
        "VERTEX_SHADER": "vertex_shader",
        "FRAGMENT_SHADER": "fragment_shader",
        "GEOMETRY_SHADER": "geometry_shader",
    }
    try:
        if "COMPUTE_SHADER" in sources:
            prog = ctx.compute_shader(sources["COMPUTE_SHADER"])
        else:
            prog = ctx.program(**{kw[s]: src for s, src in sources.items()})
    except Exception as exc:  # moderngl raises its own Error with the driver log
        listing = "\n\n".join(f"--- {fname} [{s}]\n{numbered(src)}" for s, src in sources.items())
        raise ShaderError(f"shaders/{fname} failed to build: {exc}\n{listing}") from exc
    if "Frame" in prog:  # the shared frame uniform block (wowgrass.render.frame.FrameUniforms)
        prog["Frame"].binding = 0
    for name, value in LINK_TIME_UNIFORMS.items():
        if name in prog:
            prog[name].value = value
    if cache is not None:
        cache[key] = prog
    compile_log(ctx).append(key)
    return prog


_COMPILES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def compile_log(ctx) -> list:
    """Every program :func:`load_program` compiled and linked on ``ctx``, in order: (file, defines)
    keys (the viewer's warm-up compiles what a scene can use before its first frame; a frame
    after it adds nothing here)."""
    log = _COMPILES.get(ctx)
    if log is None:
        log = _COMPILES[ctx] = []
    return log


class ProgramSet(dict):
    """The renderer's programs by name (the plain build of each), plus pass variants: the same
    ``.glsl`` with a pass's extra ``#define``s on top of the program's own (built once, cached)."""

    def __init__(self, ctx, defines: dict, cache: dict | None = None):
        self.ctx, self.defines = ctx, defines
        self.cache = {} if cache is None else cache
        super().__init__({name: self.variant(name) for name in defines})

    def variant(self, name: str, extra: dict | None = None):
        if not extra and name in self:
            return self[name]
        return load_program(self.ctx, name, {**self.defines.get(name, {}), **(extra or {})}, cache=self.cache)


def read_by(prog, fmt: str, *names: str) -> tuple:
    """``(fmt, *names)`` for ``ctx.vertex_array`` with the attributes ``prog`` does not read
    turned into padding (``"3f 2f/i"`` -> ``"12x 2f/i"``), so one buffer layout serves every
    program variant (the shadow pass reads no normals, a wireframe no colour) without moderngl's
    ``skip_errors``, which left ``GL_INVALID_VALUE`` behind. ``()`` when it reads none of them."""
    parts = fmt.split()
    per = "/" + parts[-1].split("/")[1] if "/" in parts[-1] else ""
    parts[-1] = parts[-1].split("/")[0]
    out_fmt, out_names, left = [], [], list(names)
    for part in parts:
        m = re.fullmatch(r"(\d*)([fiux])(\d?)", part)
        if m is None:
            raise ValueError(f"cannot read attribute format {part!r} of {fmt!r}")
        if m.group(2) == "x":  # padding already
            out_fmt.append(part)
            continue
        if not left:
            raise ValueError(f"format {fmt!r} has more attributes than the {len(names)} names given")
        name = left.pop(0)
        if name in prog:
            out_fmt.append(part)
            out_names.append(name)
        else:
            out_fmt.append(f"{int(m.group(1) or 1) * int(m.group(3) or 4)}x")
    if left:
        raise ValueError(f"format {fmt!r} has fewer attributes than the {len(names)} names given")
    return (" ".join(out_fmt) + per, *out_names) if out_names else ()


class VaoCache:
    """Vertex arrays of one set of buffers, one per program variant (a moderngl vertex array is
    bound to the program it was made for): ``vao(program)`` makes it on first use."""

    def __init__(self, make):
        self._make, self._vaos = make, {}

    def __call__(self, program):
        vao = self._vaos.get(program.glo)
        if vao is None:
            vao = self._vaos[program.glo] = self._make(program)
        return vao

    def release(self):
        for vao in self._vaos.values():
            vao.release()
        self._vaos.clear()


def frame_stride(ctx) -> int:
    """Bytes from one view's slot of the frame buffer to the next (the uniform-buffer offset
    alignment; compute passes index the same buffer by it: ``FRAME_STRIDE`` vec4s)."""
    align = int(ctx.info.get("GL_UNIFORM_BUFFER_OFFSET_ALIGNMENT", 256) or 256)
    return -(-FRAME_BLOCK_BYTES // align) * align


def frame_slot_defines(ctx, binding: int) -> dict:
    """The ``#define``s of a compute pass that reads every view's frame block from the frame
    buffer bound as storage at ``binding`` (shaders/frame.glsl's ``FRAME_SLOTS``)."""
    return {"FRAME_SLOTS": binding, "FRAME_STRIDE": frame_stride(ctx) // 16}


def make_programs(ctx, *, alpha_to_coverage: bool = False, instance_layout: str = DEFAULT_INSTANCE_LAYOUT,
                  cache: dict | None = None, grass_path: str = "instanced", wind: str = "classic",
                  wind_falloff: str = "smoothstep", look: str = "default") -> ProgramSet:
    """The renderer's programs: ``terrain``, ``grass`` and ``doodad`` (a :class:`ProgramSet`), and
    ``grass_grid`` (grass.glsl's camera-grid variant) with ``grass_path="grid"``.

    ``instance_layout``: ``"16p"`` (the default: the bundle's 16 bytes as one ``4u4`` attribute,
    1.3x faster on the H200 than two), ``"16"`` (the same bytes as ``3f 2u2``) or ``"mat4"`` (the
    grass reference's 64-byte matrices, for comparison). ``wind``/``wind_falloff``: the sway.glsl
    options (constants.WIND_MODES, WIND_FALLOFFS) both grass paths are built with. ``look``:
    ``"default"`` or ``"client"`` (grass.glsl's ``GRASS_CLIENT``: the clients' drawing, with its
    alpha test instead of alpha to coverage; the instanced path only).
    """
    if look not in LOOKS:
        raise ValueError(f"look must be one of {LOOKS}, not {look!r}")
    client = look == "client"
    windd = wind_defines(wind, wind_falloff)
    grass_defines = {"GRASS_A2C": alpha_to_coverage and not client, "INSTANCE_MAT4": instance_layout == "mat4",
                     "INSTANCE_PACKED": instance_layout == "16p", "GRASS_CLIENT": client, **windd}
    from ..constants import UNIT_SIZE, ZEROPOINT

    # the terrain computes vertex XY from the map-wide grid (render/terrain.py)
    terrain_defines = {"WOW_ZEROPOINT": float(ZEROPOINT), "WOW_HALF_UNIT": float(UNIT_SIZE / 2)}
    defines = {"terrain": terrain_defines, "grass": grass_defines, "doodad": {}, "horizon": {}, "liquid": {}, "wmo": {}, "sky": {}}
    if grass_path == "grid":
        from ..constants import GRID_DEFINES, GRID_FRAME_BINDING, GRID_STATS_SIZE

        defines["grass_grid"] = {"GRASS_A2C": alpha_to_coverage, **GRID_DEFINES, **windd}
        defines["grass_grid_compact"] = {**defines["grass_grid"], "GRID_COMPACT": True}
        defines["grass_grid_cull"] = {**GRID_DEFINES, **frame_slot_defines(ctx, GRID_FRAME_BINDING),
                                      "STATS_SIZE": GRID_STATS_SIZE}
    return ProgramSet(ctx, defines, cache)
