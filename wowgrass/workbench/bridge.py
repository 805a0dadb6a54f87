"""The bridge from the workbench to the view's scene: the one workbench module that imports render.

What the session's changes become on screen goes through here: a changed chunk's grass placed again
and merged into the tile's resident grass (:meth:`Scene.replace_grass`), a tile's cell marks
(terrain's ``CellOverlays``), the overlay, brush and picked-cell uniforms, reloads of files another
program saved (:meth:`Scene.reload_tile`), and the ray pick (``render.pick``). Render never imports
the workbench: it offers these hooks, and :class:`WindowUi` (re-exported here for the controller).
"""

from __future__ import annotations

import numpy as np

from wowgrass.formats.adt import CHUNK_SIZE, UNIT_SIZE
from wowgrass.grass.bundle import pack_instances
from wowgrass.render.pick import pick_ground, pixel_ray
from wowgrass.render.sources.terrain import OVERLAY_BITS
from wowgrass.render.window import WindowUi

from .geometry import cell_corner
from .height_atlas import GroundAtlas

__all__ = ["SceneBridge", "WindowUi", "tile_grass"]


def tile_grass(instances) -> dict:
    """A placement's :class:`~wowgrass.grass.placement.Instances` as the scene takes grass:
    model path -> INSTANCE_DTYPE (the bundle's records)."""
    out = {}
    if instances is None or len(instances) == 0:
        return out
    model = np.asarray(instances.model)
    for m in np.unique(model).tolist():
        sel = model == m
        out[instances.models[m]] = pack_instances(instances.pos[sel], instances.yaw[sel], instances.scale[sel])
    return out


class SceneBridge:
    """``scene`` as the workbench changes it (see the module docstring). ``session``: the
    EditSession whose placements and tiles it hands over."""

    def __init__(self, session, scene, colours):
        self.session, self.scene = session, scene
        scene.keep_grass = True
        scene.terrain.cells.set_colours = colours.shader_colours()
        self.edits_applied: list = []  # (change label, frame the scene got its grass)
        self.frame = 0  # the controller's frame count (edits_applied names it)
        self.ground = GroundAtlas()  # the resident tiles' heights in one set of arrays (the pick's)

    # -- what is resident --
    def resident(self, key) -> bool:
        return key in self.scene.tiles

    def resident_tiles(self, *, full: bool = True) -> list:
        return [k for k, t in list(self.scene.tiles.items()) if t.full or not full]

    def grid(self, key):
        """The resident tile's ground (chunk positions and order: what a cell lookup needs), or None."""
        t = self.scene.tiles.get(key)
        return getattr(t, "adt", None)

    def on_resident(self, fn) -> None:
        """``fn(key)`` once a tile is resident (again: a reload)."""
        self.scene.on_resident.append(fn)

    def grass_count(self, key):
        t = self.scene.tiles.get(key)
        return None if t is None else t.grass_instances

    # -- the pick --
    def sync_ground(self) -> None:
        """The pick's ground follows the resident tiles (a tile's heights copied once, as it arrives;
        before the frame's picks)."""
        self.ground.sync(self.scene.tiles, getattr(self.scene, "version", None))

    def ground_at(self, viewer, x: float, y: float):
        """World point under window pixel (x, y) (screen units scaled to the framebuffer): a ray over
        the resident tiles' heights (``render.pick``'s march over :class:`GroundAtlas`)."""
        target = viewer.target
        ws = target.glfw.get_window_size(target.window) if hasattr(target, "glfw") else target.size
        sx, sy = target.size[0] / max(ws[0], 1), target.size[1] / max(ws[1], 1)
        o, d = pixel_ray(viewer.camera, target.size, x * sx, y * sy)
        self.sync_ground()
        return self.ground.pick(o, d)

    def ground_at_by_tile(self, o, d):
        """``render.pick.pick_ground`` itself (per-tile passes): what the atlas's pick equals."""
        return pick_ground(self.scene, o, d)

    # -- the terrain's uniforms and cell marks --
    def show(self, overlays: dict, picked, brush) -> None:
        """The overlays shown ({name: on}), the picked cell's outline (a CellRef or None) and the
        brush circle ((x, y, radius) or None)."""
        from .overlays import DRAWN_AS

        cells = self.scene.terrain.cells
        mask = 0
        for n, on in overlays.items():
            if on:
                mask |= OVERLAY_BITS[DRAWN_AS.get(n, n)]
        cells.mask = mask
        if picked is not None:
            x, y = cell_corner(picked)
            cells.pick = (x, y, UNIT_SIZE, 1.0)
        else:
            cells.pick = (0.0, 0.0, 0.0, 0.0)
        cells.brush = (float(brush[0]), float(brush[1]), float(brush[2]), 1.0) if brush is not None else \
            (0.0, 0.0, 0.0, 0.0)

    def set_palette(self, colours) -> None:
        """The cell palette (20 RGB, 0..1): the effect sets' or the rules overlay's."""
        self.scene.terrain.cells.set_colours = tuple(colours)

    def set_cells(self, key, img) -> None:
        """A tile's cell marks: (128, 128, 4) u1 (overlays.py's layout)."""
        self.scene.terrain.cells.set(key, img)

    # -- grass --
    def placed(self, key, chunks) -> dict:
        """Model -> instances of ``chunks`` of tile ``key`` (None: every chunk), as the session
        places them now."""
        if chunks is None:
            return tile_grass(self.session.tile_instances(key))
        placed = self.session.place_chunks(key, chunks)
        parts: dict = {}
        for inst in placed.values():
            for name, arr in tile_grass(inst).items():
                parts.setdefault(name, []).append(arr)
        return {n: np.concatenate(a) for n, a in parts.items()}

    def merged(self, key, chunks, placed) -> dict:
        """The tile's resident grass with ``chunks`` replaced by ``placed``."""
        t = self.scene.tiles.get(key)
        old = (t.grass or {}) if t is not None else {}
        if chunks is None:
            return placed
        out = {}
        ground = t.adt if t is not None else None
        drop = np.zeros(256, bool)
        drop[list(chunks)] = True
        box = None
        if ground is not None and drop.any():  # the changed chunks' box: only the instances in it are tested
            o = np.asarray(ground.positions, np.float64)[0, :2]  # the grid chunk_index_at uses
            ixy = np.asarray(ground.index_xy, np.float64)[drop]
            box = (o[0] - (ixy[:, 1].max() + 1) * CHUNK_SIZE - 1e-3, o[0] - ixy[:, 1].min() * CHUNK_SIZE + 1e-3,
                   o[1] - (ixy[:, 0].max() + 1) * CHUNK_SIZE - 1e-3, o[1] - ixy[:, 0].min() * CHUNK_SIZE + 1e-3)
        for name, inst in old.items():
            if len(inst) and box is not None:
                p = inst["pos"]
                near = np.flatnonzero((p[:, 0] >= box[0]) & (p[:, 0] <= box[1]) & (p[:, 1] >= box[2]) & (p[:, 1] <= box[3]))
                if near.size:
                    ch = ground.chunk_index_at(p[near, 0], p[near, 1])
                    gone = near[drop[np.clip(ch, 0, 255)] & (ch >= 0)]
                    if gone.size:
                        keep = np.ones(len(inst), bool)
                        keep[gone] = False
                        inst = inst[keep]
            out[name] = inst
        for name, inst in placed.items():
            out[name] = np.concatenate([out[name], inst]) if name in out else inst
        return out

    def keeps_grass(self, key) -> bool:
        """Whether the scene kept ``key``'s grass arrays (so some chunks can be replaced in them)."""
        t = self.scene.tiles.get(key)
        return t is None or t.grass is not None

    def replace_chunks(self, key, chunks, label) -> None:
        """Place ``chunks`` of ``key`` again now and hand the tile's grass to the scene."""
        if not self.keeps_grass(key):  # the scene did not keep this tile's grass: all of it again
            chunks = None
        self.hand_over(key, self.merged(key, chunks, self.placed(key, chunks)), label)

    def hand_over(self, key, grass, label) -> None:
        extra = self.extras(key, grass) if self.scene.client_look else None
        self.scene.replace_grass(key, grass, extra)
        self.edits_applied.append((label, self.frame))
        del self.edits_applied[:-64]

    def extras(self, key, grass) -> dict:
        from wowgrass.render.world.client_look import tuft_extras

        adt = self.session.tile(key)
        flags = getattr(self.scene.source, "grass_flags", {})
        build = getattr(getattr(self.session, "catalog", None), "build", "3.3.5")
        return {n: tuft_extras(adt, inst, flags=flags.get(n, 0), build=build) for n, inst in grass.items()}

    # -- reloads --
    def reload_tile(self, key) -> bool:
        """The scene reads the tile's files again (the old tile drawn until the new one is uploaded)."""
        return bool(self.scene.reload_tile(key))

    def tables_changed(self, catalog) -> None:
        """Tiles loaded from now on are placed with ``catalog`` (the view's source)."""
        if hasattr(self.scene.source, "catalog"):
            self.scene.source.catalog = catalog

    def keep_spare(self) -> None:
        """A reloaded tile's second copy is drawn until it replaces the first: room kept for it."""
        if hasattr(self.scene, "keep_spare"):
            self.scene.keep_spare(1)

    def move_camera(self, viewer, position, target) -> None:
        cam = viewer.camera
        cam.position = np.array(position, float)
        cam.look_at(target)
        self.scene.update(cam.position)

    def scene_version(self):
        return getattr(self.scene, "version", 0)


def write_screen_png(target, path) -> None:
    """The window's back buffer as drawn (frame and panels) to ``path``."""
    from wowgrass.render.viewer import write_png

    w, h = target.size
    data = target.ctx.screen.read(viewport=(0, 0, w, h), components=3, alignment=1)
    write_png(path, np.frombuffer(data, np.uint8).reshape(h, w, 3)[::-1])

