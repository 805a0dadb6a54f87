"""The procedural meadow's frame and ``wowgrass view --procedural`` as a library call.

A frame (:class:`~wowgrass.render.viewer.Viewer`'s, in the grass lesson's correct order): select
terrain tiles and make the blades (compute, or the CPU upload with ``--cpu-instances``); the
shadow pass (terrain tiles and the near blades into the sun's depth map, the blades bent by the
same wind); the colour pass for each view (one full-size view, or the split screen's filled left
and wireframe right halves, each with the half-width aspect); the viewport and scissor reset to
the whole frame; the overlay.
"""

from __future__ import annotations

import math
import time as _time

import numpy as np

from .camera import Camera
from .constants import EYE_HEIGHT
from .meadow import Meadow
from .viewer import Light, Toggles, Viewer

MEADOW_SUN = np.array([0.55, 0.32, 0.52])
MEADOW_SUN = MEADOW_SUN / np.linalg.norm(MEADOW_SUN)
MEADOW_FOG = (140.0, 470.0)  # the meadow is 1024 units wide: its edge stays in the fog


def meadow_viewer(target, meadow: Meadow, camera: Camera, toggles: Toggles | None = None, **kw) -> Viewer:
    """A :class:`Viewer` of the meadow: its sun (lower than the zone view's: longer blade shadows),
    a shadow map fitted to the near grass, fog that hides the meadow's edge."""
    s = meadow.settings
    light = Light(sun_dir=tuple(MEADOW_SUN), sun_color=(0.95, 0.88, 0.72), ambient=(0.36, 0.42, 0.50),
                  shadow_reach=s.shadow_reach, shadow_size=s.shadow_size, caster_height=120.0)
    return Viewer(target, meadow, camera, toggles, fog=MEADOW_FOG, light=light, **kw)


def start_camera(meadow: Meadow, *, camera=None, target=None, eye_height: float = EYE_HEIGHT) -> Camera:
    """``--camera``/``--target`` when given; else at eye height on the flattest ground near the
    meadow's centre, looking along the ground toward where it rises least (not into a hillside)."""
    f = meadow.field
    if camera is not None and len(camera) == 3:
        cam = Camera(position=np.asarray(camera, np.float64))
    else:
        if camera is not None:
            x, y = float(camera[0]), float(camera[1])
        else:
            c = f.world_size / 2
            g = np.linspace(-60.0, 60.0, 13)
            gx, gy = np.meshgrid(c + g, c + g)
            nz = f.normal(gx.ravel(), gy.ravel())[:, 2]
            i = int(np.argmax(nz - 1e-4 * np.hypot(gx.ravel() - c, gy.ravel() - c)))
            x, y = float(gx.ravel()[i]), float(gy.ravel()[i])
        cam = Camera(position=np.array([x, y, meadow.ground_height(x, y) + eye_height]))
    if target is not None:
        cam.look_at(target)
    elif camera is None or len(camera) == 2:
        yaws = np.arange(16) * (2 * math.pi / 16)
        d = np.array([10.0, 25.0, 45.0, 70.0])
        px = cam.position[0] + np.cos(yaws)[:, None] * d
        py = cam.position[1] + np.sin(yaws)[:, None] * d
        rise = (f.sample(px, py) - cam.position[2]).max(axis=1)
        cam.yaw = float(yaws[int(np.argmin(rise))])
        cam.pitch = math.radians(-6.0)
    return cam


def run_meadow(opts, *, want_window: bool, output: str | None, say) -> dict:
    """``wowgrass view --procedural`` (``opts``: :class:`wowgrass.render.app.ViewOptions`)."""
    from .app import open_target, present

    t_load = _time.perf_counter()
    target = None
    meadow = viewer = None
    try:
        target, want_window, output = open_target(opts, want_window, output, say,
                                                  f"wowgrass - procedural meadow (seed {opts.seed})")
        meadow = Meadow(target.ctx, opts.meadow_settings, opts.seed, cpu_instances=opts.cpu_instances)
        camera = start_camera(meadow, camera=opts.camera, target=opts.target)
        toggles = Toggles(grass=opts.grass, terrain=opts.terrain, stats=opts.stats, split=opts.split,
                          shadows=opts.shadows, lod_colors=opts.lod_colors, wireframe=opts.wireframe)
        viewer = meadow_viewer(target, meadow, camera, toggles)
        result = {"procedural": True, "seed": meadow.seed, "size": list(target.size),
                  "renderer": target.ctx.info.get("GL_RENDERER"), "gl_version": target.ctx.version_code,
                  "samples": target.samples, "camera": [float(v) for v in camera.position],
                  "yaw_deg": math.degrees(camera.yaw), "pitch_deg": math.degrees(camera.pitch), "time": opts.time,
                  "split": toggles.split, "shadows": toggles.shadows,
                  "blade_source": "cpu-upload" if meadow.cpu_instances else "gpu-generated",
                  "load_seconds": _time.perf_counter() - t_load}
        result.update(present(viewer, target, opts, say, want_window=want_window, output=output,
                              keys="G grass, T terrain, V split view, H shadows, F wireframe, L LOD colours"))
        if not want_window:
            result.update(meadow.drawn_counts())
            result["upload_bytes_per_frame"] = meadow.upload_bytes
        return result
    finally:
        if viewer is not None:
            viewer.release()
        if meadow is not None:
            meadow.release()
        if target is not None:
            target.release()
