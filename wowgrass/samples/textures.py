"""Procedural RGBA images for the sample world: tileable terrain textures and grass-blade sheets.

Terrain textures tile (the noise lattice wraps), grass sheets are alpha-tested silhouettes of
tapered, leaning blades whose tallest blade touches the top row, so a quad's visible height is
its geometric height.  All images are (height, width, 4) uint8, top row first.
"""

from __future__ import annotations

import numpy as np

from wowgrass.samples.noise import fbm, smoothstep

TERRAIN_SIZE = 128

# kind -> (dark colour, light colour, noise scale in pixels)
_TERRAIN = {
    "grass": ((46, 78, 22), (104, 142, 50), 10.0),
    "dirt": ((92, 68, 42), (150, 120, 80), 12.0),
    "rock": ((86, 84, 80), (160, 156, 146), 20.0),
    "road": ((128, 108, 78), (196, 176, 136), 6.0),
}


def terrain_rgba(kind: str, size: int = TERRAIN_SIZE, salt: int = 0) -> np.ndarray:
    """A tileable, noise-tinted ``size``×``size`` texture for one terrain kind."""
    dark, light, px = _TERRAIN[kind]
    cells = max(2, int(round(size / (px * 1.6))))
    u = (np.arange(size) + 0.5) * (cells / size)
    t = fbm(u[None, :], u[:, None], 7 + salt, octaves=4, salt=hash_kind(kind), period=cells)
    t = np.clip(0.5 + 0.9 * t, 0.0, 1.0)
    if kind == "rock":      # cracks: thin dark lines where a second noise crosses zero
        c = fbm(u[None, :] * 0.5, u[:, None] * 0.5, 7 + salt, octaves=3, salt=40, period=max(1, cells // 2))
        t = t * (0.55 + 0.45 * smoothstep(0.0, 0.06, np.abs(c)))
    if kind == "road":      # pebbles: bright specks
        c = fbm(u[None, :] * 3, u[:, None] * 3, 7 + salt, octaves=1, salt=41, period=cells * 3)
        t = np.maximum(t, smoothstep(0.45, 0.6, c))
    rgb = np.asarray(dark, np.float64) + t[..., None] * (np.asarray(light, np.float64) - dark)
    out = np.empty((size, size, 4), np.uint8)
    out[..., :3] = np.clip(np.round(rgb), 0, 255)
    out[..., 3] = 255
    return out


def hash_kind(kind: str) -> int:
    return sum((i + 1) * ord(ch) for i, ch in enumerate(kind)) & 0xFFFF


def grass_rgba(index: int, width: int = 64, height: int = 64, blades: int = 9,
               tint=(1.0, 1.0, 1.0)) -> np.ndarray:
    """A sheet of ``blades`` grass blades on transparent ground (alpha 0 or 255).

    Blade ``0`` is full height, so the opaque part reaches the top row; every blade starts at
    the bottom row.
    """
    rng = np.random.default_rng([0x6A55, index])
    base = rng.uniform(0.12, 0.88, blades) * width
    tall = rng.uniform(0.45, 0.95, blades)
    tall[0] = 1.0
    lean = rng.uniform(-0.22, 0.22, blades) * width
    half_w = rng.uniform(1.4, 3.2, blades) * (width / 64)
    hue = rng.uniform(0.0, 1.0, blades)

    y = (height - 1 - np.arange(height)) / (height - 1)          # 0 at the bottom row, 1 at the top
    x = np.arange(width) + 0.5
    t = y[None, :, None] / tall[:, None, None]                   # (blades, rows, 1)
    centre = base[:, None, None] + lean[:, None, None] * t * t
    hw = half_w[:, None, None] * (1.0 - t) + 0.45
    inside = (t <= 1.0) & (np.abs(x[None, None, :] - centre) <= hw)   # (blades, rows, cols)

    # The front-most (last) blade covering a pixel colours it.
    idx = np.where(inside.any(axis=0), blades - 1 - np.argmax(inside[::-1], axis=0), -1)
    dark = np.array([34, 62, 14], np.float64)
    light = np.array([120, 160, 52], np.float64)
    dry = np.array([150, 150, 70], np.float64)
    tt = np.broadcast_to(y[:, None], idx.shape)
    h = hue[np.maximum(idx, 0)]
    tip = dark + (light - dark) * tt[..., None]
    rgb = tip + (dry - tip) * (0.35 * h * tt)[..., None]
    rgb *= np.asarray(tint, np.float64)
    out = np.zeros((height, width, 4), np.uint8)
    out[..., :3] = np.clip(np.round(rgb), 0, 255)
    out[..., 3] = np.where(idx >= 0, 255, 0)
    out[idx < 0, :3] = 0
    return out


def skin_rgba(size: int = 32) -> np.ndarray:
    """A plain tunic-and-skin texture for the reference figure (top half skin, bottom cloth)."""
    out = np.empty((size, size, 4), np.uint8)
    out[: size // 4] = (224, 180, 140, 255)
    out[size // 4:] = (60, 80, 150, 255)
    out[size // 4:, ::4] = (50, 66, 128, 255)
    return out
