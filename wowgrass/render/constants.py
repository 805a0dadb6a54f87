"""Rendering constants: the grass reference's table (r_wowmap.h) and the viewer's defaults.

These are the defaults the sway shader is compiled with (``#define`` injection, see
:mod:`wowgrass.render.gl.programs`) and the values the frame's uniform block carries (``uGrassFrame``,
``uRings``; shaders/frame.glsl) unless a caller overrides them through :class:`GrassSettings`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from wowgrass.formats.adt import CHUNK_SIZE, TILE_SIZE, UNIT_SIZE, ZEROPOINT  # noqa: F401 - world geometry (formats.md section 0)
from wowgrass.grass.grid_tiles import ANCHOR, GRID_HALF, GRID_SIDE, JITTER, SLOT_SPACING

# The grass reference's shared constants table (r_wowmap.h).
WIND_PHASE_X = 0.917  # rad / world unit along X: adjacent blades 2.5 u apart differ by ~131 deg
WIND_PHASE_Y = 1.481  # rad / world unit along Y (ratio ~ phi^2, no grid-aligned periodicity)
WIND_SPEED = 1.7  # rad / s
WIND_AMPLITUDE = 0.12  # fraction of blade height at the tip
ROOT_FRACTION = 0.15  # normalised height below which sway is zero
FADE_START_DISTANCE = 160.0  # world units: grass starts to fade out here
DRAW_DISTANCE = 220.0  # world units: grass is not drawn beyond this
SWAY_DIRECTION = (1.0, 0.35)  # the grass reference's diagonal sway (x, 0.35 x), normalised in GrassSettings

# Wind options (sway.glsl; `view --wind gust`): the gust band and its travel.
GUST_DIRECTION = (1.0, 0.35)  # world XY the gust travels and pushes along (normalised in the shader)
GUST_SPEED = 9.0  # world units / s
GUST_WIDTH = 7.0  # half width of the raised-cosine band, world units
GUST_SPACING = 60.0  # distance between successive bands
GUST_BEND = 4.0  # world units the front is displaced by its sine ...
GUST_BEND_FREQ = 0.07  # ... of this many rad / unit across the wind
GUST_STRENGTH = 2.5  # peak push as a multiple of the classic amplitude
WIND_MODES = ("classic", "two-axis", "gust")  # WOW_GRASS_WIND 0, 1, 2
WIND_FALLOFFS = ("smoothstep", "quadratic")  # WOW_GRASS_WIND_FALLOFF 0, 1

# The far view: fog from FOG_START to VIEW_DISTANCE at the ground, opening up with the height above
# it (fog end + 4x the height, up to TERRAIN_REACH, how far terrain-only tiles are loaded).
FOG_START = 700.0
VIEW_DISTANCE = 2400.0
TERRAIN_REACH = 3200.0
# With a map's WDL drawn beyond the far tiles (sources/horizon.py) the fog's end opens up to this,
# half the map (32 tiles): from high up, the horizon is the whole map as far as the fog lets it be.
HORIZON_REACH = 32 * TILE_SIZE

# view --look client (client.md section 5): groundEffectDist's default, and the fade over its last 15%
CLIENT_DRAW_DISTANCE = 70.0
CLIENT_FADE_FROM = 0.85  # 3.3.5: fraction of groundEffectDist where the fade starts [F]
CLIENT_FADE_FROM_112 = 0.75  # 1.12 and 2.4.3: a fixed 70 yards faded over its last quarter, from 52.5 [B]
DEFAULT_FADE_FROM = FADE_START_DISTANCE / DRAW_DISTANCE  # the default look's, when --grass-distance moves it

EYE_HEIGHT = 1.7  # world units above the ground (a human is ~2.0 units tall, the grass reference's size oracle)

# The defines every shader sees; values are Python numbers formatted as GLSL floats.
SHADER_DEFINES = {
    "WOW_GRASS_WIND_PHASE_X": WIND_PHASE_X,
    "WOW_GRASS_WIND_PHASE_Y": WIND_PHASE_Y,
    "WOW_GRASS_WIND_SPEED": WIND_SPEED,
    "WOW_GRASS_WIND_AMPLITUDE": WIND_AMPLITUDE,
    "WOW_GRASS_WIND_ROOT_FRACTION": ROOT_FRACTION,
    "WOW_GRASS_FADE_START_DISTANCE": FADE_START_DISTANCE,
    "WOW_GRASS_DRAW_DISTANCE": DRAW_DISTANCE,
    "WOW_GRASS_GUST_DIR_X": GUST_DIRECTION[0],
    "WOW_GRASS_GUST_DIR_Y": GUST_DIRECTION[1],
    "WOW_GRASS_GUST_SPEED": GUST_SPEED,
    "WOW_GRASS_GUST_WIDTH": GUST_WIDTH,
    "WOW_GRASS_GUST_SPACING": GUST_SPACING,
    "WOW_GRASS_GUST_BEND": GUST_BEND,
    "WOW_GRASS_GUST_BEND_FREQ": GUST_BEND_FREQ,
    "WOW_GRASS_GUST_STRENGTH": GUST_STRENGTH,
    "CELL_MARK_SLOTS": 4,  # terrain.glsl's per-cell mark slots (sources/cell_marks.py)
}

GRID_DEFINES = {  # the camera grid's (sources/grass_grid.py; the lattice: wowgrass.grass.grid_tiles)
    "GRASS_GRID": True,
    "GRID_SIDE": GRID_SIDE,
    "GRID_HALF": GRID_HALF,
    "GRID_SPACING": SLOT_SPACING,
    "GRID_JITTER": JITTER,
    "GRID_ANCHOR": ANCHOR,
    "GRID_WIND_AMPLITUDE": 0.22,  # the reference's grid sway: world units at the tip ...
    "GRID_SWAY_X": 1.0,  # ... along (wave, wave * 0.35), not normalised, as written
    "GRID_SWAY_Y": 0.35,
    "WOW_ZEROPOINT": ZEROPOINT,
    "WOW_UNIT_SIZE": UNIT_SIZE,
    "GRID_WIND_REACH": 1.0,  # furthest the wind moves a tip (gust: 0.22 * 3.5): the frustum test's margin
}
GRID_STATS_SIZE = 5  # uints per view of its compaction: blades in reach, kept per ring (grass_grid_cull.glsl)
GRID_FRAME_BINDING = 4  # storage binding of the frame block's buffer in the compaction (frame.glsl)


RING_SLOTS = 3  # rings beyond the first that the shaders know (shaders/frame.glsl: uRings, uRingKeep)


@dataclass
class RingSettings:
    """LOD density rings (the grass lesson's density-based LOD): ring 0 (inside ``radii[0]``) keeps
    every instance, ring k keeps the fraction ``keep[k-1]`` of them, chosen by a per-instance hash
    so that what an outer ring keeps is also kept by every inner ring. Over ``band`` units at each
    ring's inner edge the instances the ring drops dissolve instead of popping. Rings from
    ``lite_ring`` on draw the model's lighter mesh where it has one. The defaults thin the grass
    where a clump is a few pixels tall at 1080p (beyond ~70 units) and keep the near field whole."""

    radii: tuple = (70.0, 120.0, 170.0)
    keep: tuple = (0.6, 0.35, 0.2)
    band: float = 10.0
    lite_ring: int = 3
    enabled: bool = True
    debug: bool = False  # colour each ring (--debug-rings)

    def __post_init__(self):
        r, k = tuple(float(v) for v in self.radii), tuple(float(v) for v in self.keep)
        if len(r) != len(k) or not 0 <= len(r) <= RING_SLOTS:
            raise ValueError(f"rings: {len(r)} radii and {len(k)} keep fractions (0..{RING_SLOTS} rings, one each)")
        if any(b <= a for a, b in zip(r, r[1:])) or any(v <= 0 for v in r):
            raise ValueError(f"ring radii must be positive and increasing: {r}")
        if any(not 0.0 <= v <= 1.0 for v in k) or any(b > a for a, b in zip(k, k[1:])):
            raise ValueError(f"ring keep fractions must be in 0..1 and not increase outwards: {k}")
        if self.band < 0:
            raise ValueError(f"ring band must be >= 0: {self.band}")
        self.radii, self.keep = r, k

    def radii_padded(self) -> tuple:
        """Ring start radii for the shaders: unused rings (or all, when off) start at infinity."""
        r = self.radii if self.enabled else ()
        return tuple(r) + (3.0e38,) * (RING_SLOTS - len(r))

    def keep_padded(self) -> tuple:
        k = self.keep if self.enabled else ()
        return tuple(k) + ((k[-1] if k else 1.0),) * (RING_SLOTS - len(k))


def wind_defines(wind: str = "classic", falloff: str = "smoothstep") -> dict:
    """The ``#define``s selecting a wind option (both grass paths, every pass)."""
    return {"WOW_GRASS_WIND": WIND_MODES.index(wind), "WOW_GRASS_WIND_FALLOFF": WIND_FALLOFFS.index(falloff)}


def client_fade_from(build: str | None) -> float:
    """The fraction of the draw distance where the client look's fade starts, per build (client.md §5)."""
    return CLIENT_FADE_FROM_112 if build in ("1.12", "2.4.3") else CLIENT_FADE_FROM


@dataclass
class GrassSettings:
    """What goes into sway.glsl's ``uGrassParams`` (through the frame block); defaults are the grass
    reference's constants table."""

    wind_speed: float = WIND_SPEED
    wind_amplitude: float = WIND_AMPLITUDE
    root_fraction: float = ROOT_FRACTION
    fade_start: float = FADE_START_DISTANCE
    draw_distance: float = DRAW_DISTANCE
    phase: tuple[float, float] = (WIND_PHASE_X, WIND_PHASE_Y)
    direction: tuple[float, float] = SWAY_DIRECTION
    enabled: bool = True  # sway on/off (column 3 .z); grass itself is toggled by the viewer
    rings: RingSettings = field(default_factory=RingSettings)

    @classmethod
    def for_look(cls, look: str = "default", distance: float | None = None, rings: RingSettings | None = None,
                 build: str | None = None):
        """The settings of a look: ``"default"`` (the grass reference's: fade 160 -> 220, sway, the
        rings) or ``"client"`` (the clients': draw distance 70, no sway, no rings, faded as ``build``
        does: 3.3.5 (and an unknown build) from 85% of it, 1.12 and 2.4.3 over its last quarter);
        ``distance`` moves the draw distance (and the fade with it, in proportion)."""
        if look == "client":
            d = CLIENT_DRAW_DISTANCE if distance is None else float(distance)
            return cls(fade_start=d * client_fade_from(build), draw_distance=d, enabled=False,
                       rings=RingSettings(enabled=False))
        rings = rings if rings is not None else RingSettings()
        if distance is None:
            return cls(rings=rings)
        return cls(fade_start=float(distance) * DEFAULT_FADE_FROM, draw_distance=float(distance), rings=rings)

    def params(self, camera_xy, time: float, z_min: float, z_max: float) -> np.ndarray:
        """The ``uGrassParams`` mat4 as a (4, 4) float32 array whose row i is GLSL column i.

        [0] = (camera_xy, fade_start, fade_end)   [1] = (time, wind_speed, amplitude, root_fraction)
        [2] = (phase_xy, sway_direction_xy)        [3] = (model_z_min, model_z_max, enabled, 0)
        """
        c = self.frame_columns(camera_xy, time)
        return np.array([c[0:4], c[4:8], c[8:12], (z_min, z_max, c[12], 0.0)], dtype="f4")

    def frame_columns(self, camera_xy, time: float) -> tuple:
        """Columns 0-2 of :meth:`params` and the sway switch, as 13 floats (the frame block's
        ``uGrassFrame``; plain Python: it is packed every frame)."""
        dx, dy = (float(v) for v in self.direction)
        n = (dx * dx + dy * dy) ** 0.5 or 1.0
        return (float(camera_xy[0]), float(camera_xy[1]), self.fade_start, self.draw_distance,
                time, self.wind_speed, self.wind_amplitude, self.root_fraction,
                self.phase[0], self.phase[1], dx / n, dy / n, 1.0 if self.enabled else 0.0)
