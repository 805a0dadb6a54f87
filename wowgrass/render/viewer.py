"""The viewer: frames of a scene (:func:`wowgrass.render.frame.draw_frame` over its sources),
stats, runtime toggles, PNG output, the window.

Toggles mirror the grass reference's cvars: ``r_grass`` (G), ``r_doodads`` (O), ``r_terrain`` (T),
``r_stats`` (F3, printed on the console once a second and drawn as the window title; in a split
screen also along the bottom of the frame), plus the sun's shadows (H), the split filled/wireframe screen (V), a
wireframe view (F) and LOD colours (L). A frame: the shadow pass (the sun's view), the colour
pass over the views (one, or the split screen's two halves), then the viewport and scissor back
to the whole frame for the overlay (stats line, a label per half).
Frame statistics: CPU milliseconds to build and submit the frame, GPU milliseconds from a
``GL_TIME_ELAPSED`` query, draw calls, instances and triangles submitted.
"""

from __future__ import annotations

import time as _time
from collections import deque
from dataclasses import asdict, dataclass

import numpy as np

from .camera import Camera
from .constants import FOG_START, VIEW_DISTANCE
from .frame import AMBIENT, SKY, SUN_COLOR, SUN_DIR, Frame, FrameUniforms, draw_frame  # noqa: F401 - SKY: for callers
from .gl.memory import gpu_memory
from .gl.timer import GpuTimer
from .passes import ColourPass, ShadowPass
from .views import frame_views, reset_viewport


NEAR = 0.2  # the near plane at eye height (Camera's default)


@dataclass
class FrameStats:
    cpu_ms: float = 0.0
    gpu_ms: float = 0.0
    draw_calls: int = 0
    instances: int = 0
    triangles: int = 0
    grass_instances: int = 0
    resident_tiles: int = 0
    gpu_bytes: int = 0  # what the renderer holds on the GPU (gl.memory)
    frame: int = -1  # index of this frame (the viewer's count)
    gpu_frame: int = -1  # the frame gpu_ms measured: read once its fence signalled (no stall)
    # GPU-driven grass (read back only when statistics are on): instances the compute pass tested
    # (those in chunk groups that passed the group test), kept per LOD ring, drawn
    grass_tested: int | None = None
    grass_kept_per_ring: list | None = None
    grass_culling: str = "cpu"
    # terrain LOD (read back only when statistics are on): chunks drawn at levels 0..4
    terrain_chunks_per_level: list | None = None
    # WMO placements drawn (GPU-culled: read back only when statistics are on) and liquid triangles
    wmo_instances: int | None = None
    liquid_triangles: int = 0

    def line(self) -> str:
        gpu = f"{self.gpu_ms:7.3f}" if self.gpu_ms == self.gpu_ms else "    n/a"
        line = (f"cpu {self.cpu_ms:6.3f} ms  gpu {gpu} ms  draws {self.draw_calls:4d}  "
                f"instances {self.instances:9,d}  triangles {self.triangles:11,d}  tiles {self.resident_tiles}  "
                f"gpu mem {self.gpu_bytes / 1e6:,.0f} MB")
        if self.grass_tested is not None:
            line += (f"  grass: gpu-tested {self.grass_tested:,d} kept per ring "
                     + "/".join(f"{k:,d}" for k in self.grass_kept_per_ring) + f" drawn {self.grass_instances:,d}")
        if self.terrain_chunks_per_level is not None:
            line += "  terrain chunks per level " + "/".join(f"{k:,d}" for k in self.terrain_chunks_per_level)
        if self.wmo_instances is not None:
            line += f"  wmos {self.wmo_instances:,d}"
        if self.liquid_triangles:
            line += f"  liquid triangles {self.liquid_triangles:,d}"
        return line

    def as_dict(self) -> dict:
        d = asdict(self)
        if d["gpu_ms"] != d["gpu_ms"]:
            d["gpu_ms"] = None
        return d


@dataclass
class Toggles:
    grass: bool = True  # r_grass
    doodads: bool = True  # r_doodads
    terrain: bool = True  # r_terrain
    liquids: bool = True  # water, ocean, magma, slime (key R, --no-liquids)
    wmos: bool = True  # WMOs placed by MODF (key B, --no-wmos)
    stats: bool = False  # r_stats
    cull: bool = True  # per-chunk culling of grass (off: one draw per model, shader-only cull)
    lod_colors: bool = False  # terrain coloured by LOD level (key L, --lod-colors)
    mcsh: bool = False  # terrain darkened by the ADT's baked MCSH shadow map (key M, --mcsh)
    split: bool = False  # two views: filled left, wireframe right (key V, --split)
    shadows: bool = True  # the sun's shadow map (key H, --no-shadows)
    wireframe: bool = False  # the single view as a wireframe (key F, --wireframe)
    horizon: bool = True  # the map's WDL beyond the far tiles (key Z, --no-horizon)


@dataclass
class Light:
    sun_dir: tuple = tuple(SUN_DIR)  # towards the sun
    sun_color: tuple = SUN_COLOR
    ambient: tuple = AMBIENT
    shadow_reach: float = 60.0  # world units of the view the shadow map covers (then fades out): a
    # grass blade's shadow needs texels of about 0.1 unit (2048 over the fitted sphere)
    shadow_size: int = 2048  # shadow map texels per side
    caster_height: float = 250.0  # world units above the fitted view that can still cast into it


class ZoneLight:
    """The light tables' light for the view (``view --clock``): a map's lights
    (:class:`wowgrass.game.light.MapLight`) looked up at the camera every frame, the hour in
    half-minutes (``step`` moves it; the window's [ and ] keys), and the sky they colour."""

    def __init__(self, map_light, clock: int, sky=None):
        self.map_light, self.clock, self.sky = map_light, int(clock) % 2880, sky
        self.last = None  # the SceneLight of the last frame
        self.under_water = False  # the last frame's camera was below a liquid surface

    def step(self, half_minutes: int) -> None:
        self.clock = (self.clock + int(half_minutes)) % 2880

    def at(self, position, scene=None):
        """The light at ``position``; below the liquid surface of ``scene``'s resident tile there
        (``scene.liquid_at``) the client's under-water sets, or the liquid's own (magma, slime)."""
        from wowgrass.game.light import scene_light

        liquid = scene.liquid_at(float(position[0]), float(position[1])) if hasattr(scene, "liquid_at") else None
        self.under_water = liquid is not None and float(position[2]) < liquid[0]
        own = self.map_light.tables.liquid_params(liquid[1], liquid[2]) if self.under_water else None
        self.last = scene_light(self.map_light, position, self.clock, under_water=self.under_water,
                                liquid_params=own)
        return self.last


class Viewer:
    """Draws frames of a scene: the sun's shadow pass (toggle ``shadows``) and the colour pass
    over the views (one filling the target, or the split screen), the scene's sources that the
    toggles leave on; an overlay after the views."""

    def __init__(self, target, scene, camera: Camera, toggles: Toggles | None = None, *,
                 fog=(FOG_START, VIEW_DISTANCE), time_query: bool = True, light: Light | None = None,
                 zone_light: ZoneLight | None = None):
        self.target, self.scene, self.camera = target, scene, camera
        self.zone_light = zone_light
        self.ctx = target.ctx
        self.toggles = toggles or Toggles()
        self.fog = fog
        self.light = light or Light()
        self.views = frame_views(camera, target.size)
        self._views_key = None  # (camera, size, split, wireframe) self.views were made for
        self.colour_pass = ColourPass(target)
        self._shadow_pass = None  # made when shadows are first drawn
        self._overlay = None
        self.status = ""  # the stats line the overlay shows
        self.status_every = 0.5  # seconds between its refreshes (a window's; offscreen runs: 0, every frame)
        self.status_fixed: str | None = None  # shown instead of the live line (an offscreen run's summary)
        self._status_at = -1e9
        self.last_stats: FrameStats | None = None
        self.uniforms = FrameUniforms(self.ctx)
        self._memory = gpu_memory(self.ctx)
        self.camera.far = max(fog[1] * 1.1, 500.0)
        self._timer = GpuTimer(self.ctx) if time_query else None
        self.gpu_times: deque = deque(maxlen=4096)  # (frame, gpu ms) as the timer queries come back
        self._frame = 0
        self._ground = (None, None)  # (camera xy and scene version, ground height there)
        self.last_frame: Frame | None = None

    def render_frame(self, t: float) -> FrameStats:
        """Draw one frame at scene time ``t`` (seconds) into the target's framebuffer.

        ``gpu_ms`` of the returned stats is the GPU time of frame ``gpu_frame``, the newest one
        finished (NaN until one is): the CPU waits only while two frames are in flight.
        :meth:`drain_gpu_times` collects the rest."""
        cam, tg, sc = self.camera, self.toggles, self.scene
        t0 = _time.perf_counter()
        st = FrameStats(resident_tiles=len(sc.tiles), frame=self._frame, gpu_bytes=self._memory.total())
        px, py, pz = (float(v) for v in cam.position)
        zl, lt = self.zone_light, self.light
        base_fog, water, model_light = self.fog, None, None
        sun_dir, sun_color, ambient = lt.sun_dir, lt.sun_color, lt.ambient
        if zl is not None:  # the light tables at the camera, for the hour
            sl = zl.at(cam.position, sc)
            base_fog, water, model_light = sl.fog, sl.water, (sl.model_ambient, sl.model_diffuse)
            sun_dir, sun_color, ambient = sl.sun_dir, sl.sun_color, sl.ambient
            self.colour_pass.clear = sl.fog_color
            if zl.sky is not None:
                zl.sky.colours = sl.sky
        # fog and far plane open up with height above the ground (a flight sees to the horizon),
        # never past the far tiles the scene loads
        key = (px, py, sc.version)
        if self._ground[0] != key:
            self._ground = (key, sc.ground_height(px, py))
        ground = self._ground[1]
        above = max(pz - ground, 0.0) if ground is not None else 0.0
        # (with a horizon, to the horizon's reach: the WDL fills in beyond the far tiles)
        reach = sc.view_reach if tg.horizon and hasattr(sc, "view_reach") else sc.terrain_reach
        end = min(base_fog[1] + 4.0 * above, max(reach, base_fog[1]))
        fog = (min(base_fog[0] + above, 0.5 * end), end)
        cam.far = max(fog[1] * 1.1, 500.0)
        # the near plane backs off with the height (nothing is nearer than the ground): depth
        # precision for a far plane kilometres away (0.2 at eye height, 4 from 400 units up)
        cam.near = min(max(NEAR, 0.01 * above), 4.0)
        self.views = self._frame_views(cam, tg)
        frame = Frame(time=t, views=list(self.views), wind=sc.grass.settings, fog=fog, index=self._frame,
                      sun_dir=sun_dir, sun_color=sun_color, ambient=ambient, water=water, model_light=model_light)
        if zl is not None:
            frame.fog_color = zl.last.fog_color
        self._frame += 1
        grass = sc.grass
        grass.cull = tg.cull
        gpu_stats = hasattr(grass, "read_stats") and tg.stats and tg.grass
        if hasattr(grass, "collect_stats"):
            grass.collect_stats = gpu_stats
        sc.terrain.lod.debug, sc.terrain.lod.mcsh = tg.lod_colors, tg.mcsh
        sources = [s for s in sc.sources if getattr(tg, s.name, True)]
        if zl is not None and zl.sky is not None:
            sources.insert(0, zl.sky)
        if self._timer is not None:
            self._timer.begin()
        total = draw_frame(frame, self.passes, sources, self.uniforms)
        self.last_frame = frame
        self._draw_overlay(st)
        st.draw_calls, st.instances, st.triangles = total.draw_calls, total.instances, total.triangles
        st.grass_instances = frame.counts["grass"].instances if "grass" in frame.counts else 0
        st.cpu_ms = (_time.perf_counter() - t0) * 1000.0
        if hasattr(grass, "read_stats"):
            st.grass_culling = "gpu" if tg.cull else "off"
        if gpu_stats and tg.cull:  # the GPU decided what is drawn: read its counters (waits for it)
            g = [grass.read_stats(v) for v in frame.views]
            st.grass_tested = sum(x["gpu_tested"] for x in g)
            st.grass_kept_per_ring = [sum(x["kept_per_ring"][k] for x in g) for k in range(4)]
            st.grass_instances = sum(x["drawn"] for x in g)
            st.instances += st.grass_instances
            st.triangles += sum(x["drawn_triangles"] for x in g)
        if "liquids" in frame.counts:
            st.liquid_triangles = frame.counts["liquids"].triangles
        wmos = getattr(sc, "wmos", None)
        if wmos is not None and tg.wmos and "wmos" in frame.counts:
            if tg.stats and wmos.gpu_cull:  # what the GPU culling drew (waits for it)
                w = [wmos.read_stats(v) for v in frame.views]
                st.wmo_instances = sum(x["instances"] for x in w)
                st.instances += st.wmo_instances
                st.triangles += sum(x["triangles"] for x in w)
            elif not wmos.gpu_cull:
                st.wmo_instances = frame.counts["wmos"].instances
        if tg.stats and tg.terrain and getattr(sc.terrain, "indirect", False) and sc.terrain.tiles:  # the same for the terrain
            t = [sc.terrain.read_stats(v) for v in frame.views]
            st.terrain_chunks_per_level = [sum(x["chunks_per_level"][k] for x in t) for k in range(5)]
            st.triangles += sum(x["triangles"] for x in t)
        st.gpu_ms = float("nan")
        if self._timer is not None:
            done = self._timer.end()  # finished frames; waits only with 2 frames in flight
            self.gpu_times.extend(done)
            if done:
                st.gpu_frame, st.gpu_ms = done[-1]
        self.last_stats = st
        return st

    def _warm_frame(self, tiny) -> None:
        """One frame of the scene with every toggle that draws on (and the shadows) into
        ``tiny``: the real pipelines (compute passes, indirect draws, the shadow map, the
        buffers' first use) before the first frame; the viewer's own state is kept."""
        keep = (self.target, self.colour_pass, self.toggles, self.views, self._views_key, self.last_stats)
        timer, self._timer = self._timer, None
        try:
            self.target, self.colour_pass = tiny, ColourPass(tiny)
            self.toggles = Toggles(stats=False, split=False, wireframe=False, lod_colors=self.toggles.lod_colors,
                                   mcsh=self.toggles.mcsh)
            self._views_key = None
            self.render_frame(0.0)
            self._frame -= 1
        finally:
            (self.target, self.colour_pass, self.toggles, self.views, self._views_key, self.last_stats) = keep
            self._timer = timer

    def warm_up(self, *, lines: bool = True, frame_too: bool = True) -> dict:
        """Compile every program the scene's sources can draw with, in every pass (the sun's
        shadows, colour) and fill (filled, and with ``lines`` the wireframe), and draw each once
        under its source's pipeline state into a tiny target of the frame's sample count, before
        the first frame: no compile and no first-draw pipeline build falls inside a frame later
        (a source that has nothing yet, the lake before its tile arrives, is warmed all the same;
        docs/view.md "No cold-start hitch"); ``frame_too``: then a whole frame of the scene as it
        stands into that target (:meth:`_warm_frame`). Returns what it did: programs compiled,
        draws, ms."""
        import copy
        import moderngl

        from .gl.context import create_offscreen_target
        from .gl.programs import compile_log
        from .gl.state import disable, enable, enable_only
        from .shadow import ShadowMap
        from .views import View

        t0 = _time.perf_counter()
        ctx, sc = self.ctx, self.scene
        log = compile_log(ctx)
        before = len(log)
        cam = copy.copy(self.camera)
        tiny = create_offscreen_target((8, 8), self.target.samples, ctx=ctx)
        shadow = ShadowPass(ShadowMap(ctx, 16, reach=self.light.shadow_reach))
        views = [View(cam, (0, 0, 8, 8), "filled")] + ([View(copy.copy(cam), (0, 0, 8, 8), "lines")] if lines else [])
        frame = Frame(time=0.0, views=views, wind=sc.grass.settings, fog=self.fog)
        uniforms = FrameUniforms(ctx)
        empty = {}
        draws = 0
        sources = list(sc.sources)  # every source, toggled off or not (a key turns it on)
        try:
            shadow.setup(frame)
            frame.uniforms = uniforms
            uniforms.write(frame)
            for p in (shadow, ColourPass(tiny)):
                for view in p.views(frame):
                    if p is shadow and view.fill == "lines":
                        continue
                    uniforms.bind(view)
                    p.begin(frame, view)
                    for src in sources:
                        for prog, state in src.warm_programs(p, view):
                            vao = empty.get(prog.glo)
                            if vao is None:  # no attributes: their defaults; a point-sized triangle
                                vao = empty[prog.glo] = ctx.vertex_array(prog, [])
                            if state == "blend":
                                enable(ctx, moderngl.BLEND)
                                ctx.fbo.depth_mask = False
                            elif state == "coverage":
                                ctx.enable_direct(0x809E)  # GL_SAMPLE_ALPHA_TO_COVERAGE
                            vao.render(moderngl.LINES if view.fill == "lines" else moderngl.TRIANGLES, vertices=3)
                            if state == "blend":
                                ctx.fbo.depth_mask = True
                                disable(ctx, moderngl.BLEND)
                            elif state == "coverage":
                                ctx.disable_direct(0x809E)
                            draws += 1
                    p.end(frame, view)
            if frame_too:  # the scene as it stands, every source and the shadows on, into the tiny target
                self._warm_frame(tiny)
                self.target.fbo.clear(*SKY, 1.0, depth=1.0)  # the frame's own target touched once too
            if lines and self._overlay is None:  # the split screen's labels
                from .gl.programs import load_program
                from .overlay import Overlay

                self._overlay = Overlay(ctx, load_program(ctx, "overlay.glsl"))
            ctx.finish()
        finally:
            for vao in empty.values():
                vao.release()
            uniforms.release()
            shadow.map.release()
            tiny.release()
            enable_only(ctx, moderngl.DEPTH_TEST)
            reset_viewport(ctx, self.target.size)
            self.target.fbo.use()
        return {"programs_compiled": len(log) - before, "programs": len({k for k in log}), "draws": draws,
                "ms": (_time.perf_counter() - t0) * 1000.0}

    def _frame_views(self, cam, tg) -> list:
        """The frame's views, kept while the camera, size and layout stay (and their matrices
        with them, recomputed only when the camera moves); a split screen's copies of the camera
        take its current state."""
        key = (id(cam), tuple(self.target.size), tg.split, tg.wireframe)
        if self._views_key != key:
            self._views_key = key
            return frame_views(cam, self.target.size, split=tg.split, wireframe=tg.wireframe)
        for v in self.views:
            if v.camera is not cam:
                v.camera.__dict__.update(cam.__dict__)
        return self.views

    @property
    def passes(self) -> list:
        if not self.toggles.shadows:
            return [self.colour_pass]
        if self._shadow_pass is None:
            from .shadow import ShadowMap

            lt = self.light
            self._shadow_pass = ShadowPass(ShadowMap(self.ctx, lt.shadow_size, reach=lt.shadow_reach,
                                                     caster_height=lt.caster_height))
        return [self._shadow_pass, self.colour_pass]

    @property
    def overlay_shown(self) -> bool:
        """Whether frames carry the stats line (a split screen with statistics on)."""
        return self.toggles.stats and len(self.views) >= 2

    @property
    def overlay_status(self) -> str | None:
        """The stats line the last frame's overlay showed (None: no overlay)."""
        return self._overlay.last_status if self._overlay is not None else None

    @property
    def shadow_map(self):
        """The sun's shadow map (None until shadows were drawn)."""
        return self._shadow_pass.map if self._shadow_pass is not None else None

    def _draw_overlay(self, st: FrameStats):
        """After the views: viewport and scissor back to the whole frame; a split screen then gets
        a label per half and, with stats on, the stats line along the whole bottom edge (a single
        view keeps its picture clean: stats go to the console and the window title)."""
        reset_viewport(self.ctx, self.target.size)
        if len(self.views) < 2:
            return
        if self._overlay is None:
            from .overlay import Overlay
            from .gl.programs import load_program

            self._overlay = Overlay(self.ctx, load_program(self.ctx, "overlay.glsl"))
        now = _time.perf_counter()
        if self.status_fixed is not None:
            self.status = self.status_fixed
        elif self.toggles.stats and self.last_stats is not None and now - self._status_at >= self.status_every:
            self._status_at = now
            self.status = self.last_stats.line()  # the last finished frame's figures
        labels = ["filled" if v.fill == "filled" else "wireframe" for v in self.views]
        self._overlay.draw(self.target.size, self.views, labels, self.status if self.toggles.stats else None)

    def release(self):
        """The viewer's own GL objects (shadow map, overlay, uniform buffer, timer queries)."""
        if self.zone_light is not None and self.zone_light.sky is not None:
            self.zone_light.sky.release()
        if self._shadow_pass is not None:
            self._shadow_pass.map.release()
        if self._overlay is not None:
            self._overlay.release()
        self.uniforms.release()
        if self._timer is not None:
            self.gpu_times.extend(self._timer.drain())
            self._timer.release()

    def drain_gpu_times(self) -> deque:
        """Wait for the frames in flight and return ``gpu_times``: (frame, GPU ms), oldest first."""
        if self._timer is not None:
            self.gpu_times.extend(self._timer.drain())
        return self.gpu_times

    def read_rgba(self) -> np.ndarray:
        return self.target.read_rgba()

    def save_png(self, path) -> None:
        write_png(path, self.read_rgba()[..., :3])


def write_png(path, rgb: np.ndarray) -> None:
    """Write an (H, W, 3) uint8 frame atomically, in the format its suffix names (.png, .jpg, ...)."""
    from wowgrass.fileio import write_image

    write_image(path, np.ascontiguousarray(rgb))
