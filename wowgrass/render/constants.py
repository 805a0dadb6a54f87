"""Rendering constants: the grass reference's table (r_wowmap.h) and the viewer's defaults.

These are the defaults the sway shader is compiled with (``#define`` injection, see
:mod:`wowgrass.render.programs`) and the values uploaded in ``uGrassParams`` unless a caller
overrides them through :class:`GrassSettings`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wowgrass.formats.adt import CHUNK_SIZE, TILE_SIZE, UNIT_SIZE, ZEROPOINT  # noqa: F401 - world geometry (formats.md section 0)

# The grass reference's shared constants table (r_wowmap.h).
WIND_PHASE_X = 0.917  # rad / world unit along X: adjacent blades 2.5 u apart differ by ~131 deg
WIND_PHASE_Y = 1.481  # rad / world unit along Y (ratio ~ phi^2, no grid-aligned periodicity)
WIND_SPEED = 1.7  # rad / s
WIND_AMPLITUDE = 0.12  # fraction of blade height at the tip
ROOT_FRACTION = 0.15  # normalised height below which sway is zero
FADE_START_DISTANCE = 160.0  # world units: grass starts to fade out here
DRAW_DISTANCE = 220.0  # world units: grass is not drawn beyond this
SWAY_DIRECTION = (1.0, 0.35)  # the grass reference's diagonal sway (x, 0.35 x), normalised in GrassSettings

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
}


@dataclass
class GrassSettings:
    """What goes into ``uGrassParams``; defaults are the grass reference's constants table."""

    wind_speed: float = WIND_SPEED
    wind_amplitude: float = WIND_AMPLITUDE
    root_fraction: float = ROOT_FRACTION
    fade_start: float = FADE_START_DISTANCE
    draw_distance: float = DRAW_DISTANCE
    phase: tuple[float, float] = (WIND_PHASE_X, WIND_PHASE_Y)
    direction: tuple[float, float] = SWAY_DIRECTION
    enabled: bool = True  # sway on/off (column 3 .z); grass itself is toggled by the viewer

    def params(self, camera_xy, time: float, z_min: float, z_max: float) -> np.ndarray:
        """The ``uGrassParams`` mat4 as a (4, 4) float32 array whose row i is GLSL column i.

        [0] = (camera_xy, fade_start, fade_end)   [1] = (time, wind_speed, amplitude, root_fraction)
        [2] = (phase_xy, sway_direction_xy)        [3] = (model_z_min, model_z_max, enabled, 0)
        """
        d = np.asarray(self.direction, dtype=np.float64)
        n = float(np.hypot(*d))
        d = d / n if n > 0 else d
        return np.array(
            [
                [camera_xy[0], camera_xy[1], self.fade_start, self.draw_distance],
                [time, self.wind_speed, self.wind_amplitude, self.root_fraction],
                [self.phase[0], self.phase[1], d[0], d[1]],
                [z_min, z_max, 1.0 if self.enabled else 0.0, 0.0],
            ],
            dtype="f4",
        )
