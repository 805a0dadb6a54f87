"""The zone's light in a glTF: the client's directional light as a ``KHR_lights_punctual``
directional light (a node whose -Z points where the light travels), and the sky, fog, ambient
and water colours as the scene's ``extras["wow_light"]`` (``export gltf --clock``; docs/light.md)."""

from __future__ import annotations

import numpy as np

from .gltf import to_gltf

LIGHTS_EXT = "KHR_lights_punctual"


def _quat_from_to(a: np.ndarray, b: np.ndarray) -> list[float]:
    """The unit quaternion (x, y, z, w) turning unit vector ``a`` onto ``b``."""
    a, b = a / np.linalg.norm(a), b / np.linalg.norm(b)
    d = float(np.dot(a, b))
    if d < -0.999999:  # opposite: half a turn about any axis across a
        axis = np.cross(a, [1.0, 0.0, 0.0])
        if np.linalg.norm(axis) < 1e-6:
            axis = np.cross(a, [0.0, 1.0, 0.0])
        axis /= np.linalg.norm(axis)
        return [float(axis[0]), float(axis[1]), float(axis[2]), 0.0]
    c = np.cross(a, b)
    q = np.array([c[0], c[1], c[2], 1.0 + d])
    q /= np.linalg.norm(q)
    return [float(v) for v in q]


def add_light(builder, root: int, light, info: dict) -> int:
    """Add ``light`` (a :class:`wowgrass.game.light.SceneLight`) to ``builder``'s document under
    node ``root``; ``info`` (the hour, map, place, the lights and their weights) goes into the
    scene's extras with the colours. Returns the light's node."""
    doc = builder.doc
    if LIGHTS_EXT not in doc.extensionsUsed:
        doc.extensionsUsed.append(LIGHTS_EXT)
    doc.extensions = dict(doc.extensions or {})
    lights = doc.extensions.setdefault(LIGHTS_EXT, {"lights": []})["lights"]
    colour = [float(min(max(v, 0.0), 1.0)) for v in light.sun_color]
    lights.append({"type": "directional", "name": "sun", "color": colour, "intensity": 1.0})
    travel = to_gltf(-np.asarray(light.sun_dir, np.float64)[None])[0]   # WoW (X, Y, Z) -> glTF
    node = builder.node("sun", parent=root, rotation=_quat_from_to(np.array([0.0, 0.0, -1.0]), travel),
                        extras={"kind": "light", "towards_sun_wow": [float(v) for v in light.sun_dir]})
    doc.nodes[node].extensions = {LIGHTS_EXT: {"light": len(lights) - 1}}
    names = ("sky_top", "sky_middle", "sky_band1", "sky_band2", "sky_smog", "fog")
    scene = doc.scenes[doc.scene or 0]
    extras = dict(scene.extras or {})
    extras["wow_light"] = {
        **info,
        "sun_color": colour,
        "ambient": [float(v) for v in light.ambient],
        "model_ambient": [float(v) for v in light.model_ambient],   # models and WMOs (docs/light.md)
        "model_diffuse": [float(v) for v in light.model_diffuse],
        "fog_color": [float(v) for v in light.fog_color],
        "fog_start": float(light.fog[0]), "fog_end": float(light.fog[1]),
        "sky": {n: [float(v) for v in c] for n, c in zip(names, light.sky)},
        "water": {n: [float(v) for v in c] for n, c in
                  zip(("river_shallow", "river_deep", "ocean_shallow", "ocean_deep"), light.water)},
        "colour_range": "0..1 (the tables' bytes / 255)",
    }
    scene.extras = extras
    return node
