"""A zone for Blender as plain arrays: what the extension's import turns into Blender data.

No bpy here (the tests check these arrays without Blender) and no moderngl, glfw or pygltflib
(the extension bundles wowgrass without them): terrain, layer weights, liquids, WMO and M2 meshes,
placements and the grass points of a tile, in WoW's world axes (X north, Y west, Z up, yards)
less the zone's origin (the centre of the tiles, on the ground plane: float32 stays precise).

The grass is the tile's bundle, baked as ``wowgrass bake`` bakes it (the same cache, the same
placement and draw capacity), so the points equal ``wowgrass bundle export`` of that bundle.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from wowgrass.errors import FormatError, GameFileNotFound, UsageError, WowgrassError

log = logging.getLogger(__name__)

PLACEMENTS = ("client", "coverage")
ALPHA_SIZE = 64          # alpha map texels a chunk side
WEIGHT_SIZE = 16 * ALPHA_SIZE   # a tile's layer-weight image side
MCSH_DARKEN = 0.45       # terrain.glsl: lit *= 1 - 0.45 * shadow


@dataclass
class ZoneOptions:
    """What File > Import > WoW zone and ``wowgrass blender import`` ask."""

    data: list = field(default_factory=list)   # data folders, the first the base (empty: the sample world)
    adt_files: list = field(default_factory=list)   # loose ADT files instead of a map's tiles
    dbc: str | None = None                     # a folder of loose tables (with adt_files and no data)
    map_name: str | None = None
    tiles: list = field(default_factory=list)  # tile texts as --tile takes them ("32,48", "31:33,47:49")
    build: str | None = None
    placement: str = "client"
    picks: int | None = None                   # client picks per chunk (None: the client's default)
    capacity: bool = True                      # the client's draw capacity (client placement)
    clock: str | None = "12:00"                # the light's hour (None: no light)
    terrain: bool = True
    liquids: bool = True
    wmos: bool = True
    doodads: bool = True
    grass: bool = True

    def constants(self):
        from wowgrass.grass.placement import PlacementConstants

        kw = {"client_capacity": 1 if self.capacity else 0}
        if self.picks is not None:
            kw["client_picks"] = int(self.picks)
        return PlacementConstants(**kw)


@dataclass
class Terrain:
    positions: np.ndarray    # (256*145, 3) f4, relative to the zone origin
    normals: np.ndarray      # (256*145, 3) f4
    uv: np.ndarray           # (256*145, 2) f4: u east, v north across the tile (Blender's image origin)
    triangles: np.ndarray    # (k, 3) i4, holes cut
    colours: np.ndarray | None   # (256*145, 3) f4 MCCV multiplier (1 = neutral), None without MCCV
    textures: list           # MTEX names
    weights: np.ndarray      # (ceil(n/4), WEIGHT_SIZE, WEIGHT_SIZE, 4) u1: texture 4i+k's share in image i channel k (row 0 south)
    shadow: np.ndarray       # (WEIGHT_SIZE, WEIGHT_SIZE) u1: 255 where MCSH is set (row 0 south)
    has_shadow: bool


@dataclass
class GrassPoints:
    positions: np.ndarray    # (n, 3) f4 relative to the origin
    yaw: np.ndarray          # (n,) f4 radians about Z, counter-clockwise from +X (north)
    scale: np.ndarray        # (n,) f4
    model: np.ndarray        # (n,) i4 index into ``models``
    models: list             # model game paths (the bundle's, those with instances)
    stand_in: list           # per model: the data lacks it (drawn as the viewer's crossed quads)
    bundle: str = ""
    placement: str = ""
    capacity_dropped: int | None = None


@dataclass
class ModelMesh:
    """An M2's view 0 (or a WMO group): vertices in its own space and one part per material."""

    name: str
    positions: np.ndarray    # (n, 3) f4
    normals: np.ndarray | None
    uv: np.ndarray | None    # (n, 2) f4, V as the file has it (down the image)
    colours: np.ndarray | None = None   # (n, 3) f4 (WMO MOCV, doubled as the client does)
    parts: list = field(default_factory=list)   # (triangles (k, 3) i4, Material)


@dataclass(frozen=True)
class Material:
    name: str
    texture: str | None      # game path of its BLP (None: untextured)
    blend: str = "opaque"    # "opaque", "clip" (alpha key: grass), "blend"
    two_sided: bool = False
    colour: tuple = (1.0, 1.0, 1.0, 1.0)


@dataclass
class Placements:
    """Instances of one model (an M2 or a WMO): row-major (n, 4, 4) matrices relative to the origin."""

    path: str
    kind: str                # "doodad", "wmo", "wmo doodad"
    matrices: np.ndarray
    unique_ids: list = field(default_factory=list)
    doodad_sets: list = field(default_factory=list)


@dataclass
class Water:
    name: str
    type_id: int
    kind: int
    positions: np.ndarray    # (n, 3) f4 relative
    uv: np.ndarray
    triangles: np.ndarray
    cells: int
    material: Material = None


class Zone:
    """An open data source and the tiles asked: origin, tables, meshes (read once) and per-tile
    arrays. Close it (or use ``with``)."""

    def __init__(self, opts: ZoneOptions):
        from wowgrass.game.data import open_data
        from wowgrass.game.maps import choose_map, map_tiles
        from wowgrass.grass.bake import ModelTable, default_data, load_catalog, parse_tile_ranges

        if opts.placement not in PLACEMENTS:
            raise UsageError(f"placement must be one of {', '.join(PLACEMENTS)}, got {opts.placement!r}")
        self.opts = opts
        self._adts: dict = {}
        self._files: dict = {}
        self.dbc = None
        if opts.adt_files:
            self._open_files(opts)
            return
        data_path, map_name = list(opts.data), opts.map_name
        if not data_path:
            base, sample_map = default_data()
            data_path, map_name = [base], map_name or sample_map
        missing = [p for p in data_path if not Path(p).is_dir()]
        if missing:
            raise UsageError(f"data folder {missing[0]} does not exist")
        self.data = open_data(data_path, build=opts.build)
        try:
            self.map_name = choose_map(self.data, map_name)
            ranges = [parse_tile_ranges(t) for t in opts.tiles] or None
            mt = map_tiles(self.data, self.map_name, ranges)
            if not mt.tiles:
                raise UsageError(f"map {self.map_name} has none of the tiles asked ({', '.join(opts.tiles) or 'all'})"
                                 + (f"; {mt.note()}" if mt.note() else ""))
            self.tiles, self.big_alpha, self.note = list(mt.tiles), mt.big_alpha, mt.note()
            self.catalog = load_catalog(data=self.data, build=opts.build or self.data.build)
            self.models = ModelTable(self.data.read)
        except BaseException:
            self.data.close()
            raise
        self.read = self.data.read
        self._init_rest()

    def _init_rest(self):
        from wowgrass.export.ground import tiles_origin

        self.origin = tiles_origin(self.tiles)
        self._m2: dict = {}
        self._wmo: dict = {}
        self._textures: dict = {}
        self.missing_textures: set = set()
        self.missing_models: set = set()
        self._liquid_types = None
        self._wmos_seen: set = set()

    def _open_files(self, opts: ZoneOptions):
        """Loose ADT files (``bake FILE`` inputs): tables from ``dbc`` or the data; models and
        textures from the data where given (else the grass models are stand-ins)."""
        from wowgrass.game.data import open_data
        from wowgrass.game.tiles import load_tile, tile_from_name
        from wowgrass.grass.bake import ModelTable, load_catalog, tables_for

        data_path, dbc = list(opts.data), opts.dbc
        if not data_path and not dbc:
            found_data, dbc = tables_for(opts.adt_files[0])
            data_path = [found_data] if found_data else []
        self.data = open_data(data_path, build=opts.build) if data_path else None
        try:
            self.catalog = load_catalog(data=self.data, dbc_dir=dbc, build=opts.build)
            for f in opts.adt_files:
                adt, raw, _src = load_tile(f)
                self._adts[(adt.col, adt.row)] = (adt, raw, str(f))
                self._files[(adt.col, adt.row)] = f
        except BaseException:
            self.close()
            raise
        self.tiles = list(self._adts)
        self.map_name = opts.map_name or tile_from_name(Path(opts.adt_files[0]))[0]
        self.big_alpha, self.note, self.dbc = None, None, dbc
        self.models = ModelTable(self.data.read if self.data else None)
        self.read = self.data.read if self.data else _no_data
        self._init_rest()

    def close(self):
        if self.data is not None:
            self.data.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------------ reading

    def adt(self, col: int, row: int):
        """The tile's AdtTile and its bytes (read once)."""
        from wowgrass.game.tiles import adt_game_path, read_adt

        if (col, row) not in self._adts:
            name = adt_game_path(self.map_name, col, row)
            raw = self.read(name)
            self._adts[(col, row)] = (read_adt(raw, name, self.big_alpha), raw, name)
        return self._adts[(col, row)]

    def texture(self, name: str | None) -> np.ndarray | None:
        """(h, w, 4) u1 RGBA of a BLP (mip 0), or None (listed in ``missing_textures``)."""
        if not name:
            return None
        key = name.lower()
        if key not in self._textures:
            from wowgrass.formats.blp import read_blp

            try:
                self._textures[key] = read_blp(self.read(name), name).mip(0)
            except (GameFileNotFound, FileNotFoundError, FormatError) as exc:
                log.info("texture %s: %s", name, exc)
                self._textures[key] = None
                self.missing_textures.add(name)
        return self._textures[key]

    def m2(self, path: str) -> ModelMesh | None:
        """An M2's mesh (None where the data lacks it or it has no triangles)."""
        from wowgrass.formats.m2 import BlendMode, M2Model, RenderFlags
        from wowgrass.render.world.game_tiles import m2_name

        from wowgrass.export.batches import face_batches

        key = m2_name(path).lower()
        if key not in self._m2:
            mesh = None
            try:
                model = M2Model.from_bytes(self.read(m2_name(path)), m2_name(path), read=self.read)
                rm = model.render_mesh()
                stem = _stem(m2_name(path))
                mesh = ModelMesh(stem, np.asarray(rm.positions, np.float32), np.asarray(rm.normals, np.float32),
                                 np.asarray(rm.uv0, np.float32))
                tri = np.asarray(rm.indices, np.int64)
                for _, b in face_batches(rm.batches):
                    if not b.index_count:
                        continue
                    blend = "opaque" if b.blend_mode == BlendMode.OPAQUE else (
                        "clip" if b.blend_mode == BlendMode.ALPHA_KEY else "blend")
                    mat = Material(f"{stem} {_stem(b.texture) if b.texture else 'untextured'}", b.texture, blend,
                                   bool(b.render_flags & RenderFlags.TWO_SIDED))
                    mesh.parts.append((tri[b.index_start:b.index_start + b.index_count].reshape(-1, 3), mat))
                if not mesh.parts and len(tri):
                    mesh.parts.append((tri[: len(tri) // 3 * 3].reshape(-1, 3), Material(stem, None)))
                if not mesh.parts:
                    mesh = None
            except (GameFileNotFound, FileNotFoundError, FormatError, UsageError) as exc:
                log.info("model %s: %s", path, exc)
            if mesh is None:
                self.missing_models.add(m2_name(path))
            self._m2[key] = mesh
        return self._m2[key]

    def wmo(self, path: str):
        """(Wmo, {group index: ModelMesh}) or None where the data lacks the root or every group."""
        from wowgrass.formats.wmo import (
            BLEND_ALPHA_KEY, BLEND_OPAQUE, NO_MATERIAL, MaterialFlags, fixed_vertex_colours, load_wmo,
        )

        key = path.lower()
        if key not in self._wmo:
            got = None
            try:
                w = load_wmo(path, self.read)
                if w.present:
                    root, groups = w.root, {}
                    for gi in w.present:
                        grp = w.groups[gi]
                        col = fixed_vertex_colours(root, grp)
                        label = f"group {gi:03d}" + (f" {w.group_name(gi)}" if w.group_name(gi) else "")
                        mesh = ModelMesh(label, np.asarray(grp.vertices, np.float32),
                                         None if grp.normals is None else np.asarray(grp.normals, np.float32),
                                         np.asarray(grp.uvs[0], np.float32) if grp.uvs else None,
                                         None if col is None else np.minimum(col[:, :3] / 127.5, 1.0).astype(np.float32))
                        for b, m in zip(grp.batches, grp.batch_materials().tolist()):
                            s, n = int(b["start_index"]), int(b["count"])
                            if not n or m == NO_MATERIAL:
                                continue
                            if 0 <= m < len(root.materials):
                                rec = root.materials[m]
                                tex = root.texture(rec["texture1"]) or None
                                blend = int(rec["blend"])
                                mat = Material(_stem(tex or "untextured"), tex,
                                               "opaque" if blend == BLEND_OPAQUE else (
                                                   "clip" if blend == BLEND_ALPHA_KEY else "blend"),
                                               bool(rec["flags"] & MaterialFlags.TWO_SIDED),
                                               (1.0, 1.0, 1.0, 1.0) if tex else (0.62, 0.58, 0.52, 1.0))
                            else:
                                mat = Material("WMO missing material", None, colour=(0.6, 0.6, 0.6, 1.0))
                            tri = np.asarray(grp.indices[s:s + n], np.int64)
                            mesh.parts.append((tri[: len(tri) // 3 * 3].reshape(-1, 3), mat))
                        if mesh.parts:
                            groups[gi] = mesh
                    got = (w, groups) if groups else None
            except (GameFileNotFound, FileNotFoundError, FormatError) as exc:
                log.info("WMO %s: %s", path, exc)
            if got is None:
                self.missing_models.add(path)
            self._wmo[key] = got
        return self._wmo[key]

    # ------------------------------------------------------------------ a tile's parts

    def terrain(self, col: int, row: int) -> Terrain:
        """The tile's MCVT mesh (holes cut), its layer weights, MCCV and MCSH."""
        from wowgrass.formats.adt import TILE_SIZE
        from wowgrass.game.coords import tile_offset
        from wowgrass.render.sources.terrain_mesh import build_terrain_arrays, chunk_layers

        from wowgrass.export.ground import chunk_grid

        adt = self.adt(col, row)[0]
        arrays = build_terrain_arrays(adt, {})   # layer pixels are Blender images: none resized here
        pos = arrays.positions.astype(np.float64)
        uv = np.empty((len(pos), 2), np.float32)
        east, south = tile_offset(pos[:, 0], pos[:, 1], col, row)
        uv[:, 0] = east / TILE_SIZE
        uv[:, 1] = 1.0 - south / TILE_SIZE   # north (image rows go up)
        idx = arrays.indices[: int(arrays.lod_count[:, 0].sum())].astype(np.int32).reshape(-1, 3)
        nrm = arrays.vertices["normal"][:, :3].astype(np.float32)
        colours = None
        if adt.mccv is not None and adt.has_mccv is not None and np.any(adt.has_mccv):
            c = np.asarray(adt.mccv, np.float32).reshape(256, 145, 4)[..., 2::-1] * (2.0 / 255.0)   # BGRA -> RGB
            c[~np.asarray(adt.has_mccv, bool)] = 1.0
            colours = c.reshape(-1, 3)
        names = list(adt.textures or [])
        lay = chunk_layers(adt)                                  # (256, 4) MTEX index, -1 absent
        a = np.asarray(adt.alpha, np.float32) / 255.0            # (256, 4, 64, 64), slot 0 unused
        share = np.zeros((256, 4, ALPHA_SIZE, ALPHA_SIZE), np.float32)
        rest = np.ones((256, ALPHA_SIZE, ALPHA_SIZE), np.float32)
        for k in (3, 2, 1, 0):                                   # the client's lerps, last layer on top
            ak = np.where((lay[:, k] >= 0)[:, None, None], a[:, k] if k else 1.0, 0.0)
            share[:, k] = ak * rest
            rest = rest * (1.0 - ak)
        n_img = max((len(names) + 3) // 4, 1)
        weights = np.zeros((n_img * 4, WEIGHT_SIZE, WEIGHT_SIZE), np.float32)
        shadow = np.zeros((WEIGHT_SIZE, WEIGHT_SIZE), np.uint8)
        iy, ix = chunk_grid(adt)
        sh = np.asarray(adt.shadow, bool)
        for c in range(256):
            y0, x0 = iy[c] * ALPHA_SIZE, ix[c] * ALPHA_SIZE
            for k in range(4):
                t = int(lay[c, k])
                if t >= 0:
                    weights[t, y0:y0 + ALPHA_SIZE, x0:x0 + ALPHA_SIZE] += share[c, k]
            shadow[y0:y0 + ALPHA_SIZE, x0:x0 + ALPHA_SIZE] = sh[c] * np.uint8(255)
        w8 = np.clip(weights * 255.0 + 0.5, 0, 255).astype(np.uint8)[:, ::-1]   # row 0 south (Blender)
        w8 = w8.reshape(n_img, 4, WEIGHT_SIZE, WEIGHT_SIZE).transpose(0, 2, 3, 1)
        return Terrain((pos - self.origin).astype(np.float32), nrm, uv, idx, colours, names,
                       np.ascontiguousarray(w8), np.ascontiguousarray(shadow[::-1]), bool(sh.any()))

    def grass(self, col: int, row: int, *, placement: str | None = None, picks: int | None = None,
              capacity: bool | None = None, force: bool = False) -> GrassPoints:
        """The tile's bundle (baked first where the cache has none) as points."""
        from wowgrass.grass.bake import bake_tile
        from wowgrass.grass.bundle import read_bundle, unpack_instances

        o = self.opts
        placement = placement or o.placement
        if placement not in PLACEMENTS:
            raise UsageError(f"placement must be one of {', '.join(PLACEMENTS)}, got {placement!r}")
        opts = ZoneOptions(picks=o.picks if picks is None else picks,
                           capacity=o.capacity if capacity is None else capacity)
        adt, raw, name = self.adt(col, row)
        if (col, row) in self._files:   # a loose file: as `bake FILE` bakes it
            from wowgrass.grass.bake import bake_file

            res = bake_file(self._files[(col, row)], data=self.data, dbc_dir=self.dbc, build=o.build,
                            map_name=o.map_name, placement=placement, constants=opts.constants(), force=force)
        else:
            res = bake_tile(raw, self.catalog, map_name=self.map_name, placement=placement, constants=opts.constants(),
                            models=self.models, big_alpha=self.big_alpha, adt_path=name, tile=adt, force=force)
        pos, yaw, scale, model, models, stand_in = [], [], [], [], [], []
        with read_bundle(res.path) as bundle:
            for m in bundle.models:
                if len(m) == 0:
                    continue
                p, y, s = unpack_instances(m.instances)
                pos.append(p)
                yaw.append(y)
                scale.append(s)
                model.append(np.full(len(p), len(models), np.int32))
                models.append(m.path)
                stand_in.append(not m.info.present or self.m2(m.path) is None)
        if pos:
            p = (np.concatenate(pos).astype(np.float64) - self.origin).astype(np.float32)
            return GrassPoints(p, np.concatenate(yaw), np.concatenate(scale), np.concatenate(model), models, stand_in,
                               res.path, placement, res.capacity_dropped)
        z = np.zeros(0, np.float32)
        return GrassPoints(np.zeros((0, 3), np.float32), z, z, np.zeros(0, np.int32), [], [], res.path, placement,
                           res.capacity_dropped)

    def doodads(self, col: int, row: int) -> list[Placements]:
        """The tile's MDDF placements, one entry per model."""
        from wowgrass.render.sources.doodads import mddf_matrices
        from wowgrass.render.world.game_tiles import m2_name

        adt = self.adt(col, row)[0]
        if not len(adt.mddf) or not adt.models:
            return []
        ids = adt.mddf["name_id"].astype(np.int64)
        ok = ids < len(adt.models)
        mats = np.asarray(mddf_matrices(adt.mddf[ok]), np.float64).reshape(-1, 4, 4).transpose(0, 2, 1)
        mats[:, :3, 3] -= self.origin
        uids = adt.mddf["unique_id"][ok].astype(np.int64)
        out = []
        for k in np.unique(ids[ok]).tolist():
            sel = ids[ok] == k
            out.append(Placements(m2_name(adt.models[k]), "doodad", mats[sel], uids[sel].tolist()))
        return out

    def wmo_placements(self, col: int, row: int) -> tuple[list[Placements], list[Placements]]:
        """The tile's MODF placements not placed by an earlier tile (a WMO spanning tiles is placed
        once), one entry per WMO, and their doodad sets' M2s, one entry per model."""
        from wowgrass.game.mapobjects import modf_placements, wmo_doodads

        adt = self.adt(col, row)[0]
        if not len(adt.modf):
            return [], []
        p = modf_placements(adt)
        by_name: dict = {}
        doodads: dict = {}
        for k, name in enumerate(p.names):
            uid = int(p.unique_id[k])
            if not name or uid in self._wmos_seen:
                continue
            self._wmos_seen.add(uid)
            got = self.wmo(name)
            if got is None:
                continue
            m = np.asarray(p.matrices[k], np.float64)
            entry = by_name.setdefault(name, Placements(name, "wmo", np.zeros((0, 4, 4))))
            rel = m.copy()
            rel[:3, 3] -= self.origin
            entry.matrices = np.concatenate([entry.matrices, rel[None]])
            entry.unique_ids.append(uid)
            entry.doodad_sets.append(int(p.doodad_set[k]))
            names, dm = wmo_doodads(got[0].root, m, int(p.doodad_set[k]))
            for n, mm in zip(names, dm):
                if n:
                    d = doodads.setdefault(n, [])
                    r = np.array(mm, np.float64)
                    r[:3, 3] -= self.origin
                    d.append(r)
        wmos = [by_name[n] for n in sorted(by_name)]
        dd = [Placements(n, "wmo doodad", np.stack(v)) for n, v in sorted(doodads.items())]
        return wmos, dd

    def water(self, col: int, row: int, wmos: list[Placements] | None = None) -> list[Water]:
        """The tile's liquid, one mesh per LiquidType (with the MLIQ of ``wmos`` placed on it)."""
        from wowgrass.formats.wmo import group_liquid_type
        from wowgrass.game.liquid_types import KIND_COLOURS, LiquidTypes, kind_name
        from wowgrass.render.world.liquid_tiles import adt_liquid_mesh, merge, wmo_liquid_mesh

        if self._liquid_types is None:
            self._liquid_types = LiquidTypes.from_read(self.read)
        types = self._liquid_types
        meshes, _err = adt_liquid_mesh(self.adt(col, row)[0], types, by_type=True)
        for pl in wmos or []:
            got = self.wmo(pl.path)
            if got is None:
                continue
            w = got[0]
            for rel in pl.matrices:
                m = rel.copy()
                m[:3, 3] += self.origin
                for gi in w.present:
                    grp = w.groups[gi]
                    if grp.liquid is None:
                        continue
                    tid = group_liquid_type(w.root, grp)
                    part = wmo_liquid_mesh(grp.liquid, m, types.get(tid).kind)
                    meshes[tid] = merge([meshes.get(tid), part]) if tid in meshes else part
        out = []
        for tid, mesh in sorted(meshes.items()):
            if not mesh:
                continue
            t = types.get(tid)
            kind = int(mesh.vertices["kind"][0])
            frames = t.frame_paths(1)
            tex = frames[0] if frames and self.texture(frames[0]) is not None else None
            r, g, b, a = KIND_COLOURS.get(kind, KIND_COLOURS[0])
            mat = Material(f"{kind_name(kind)}: {t.name}", tex, "blend" if a < 1.0 else "opaque", True,
                           (1.0, 1.0, 1.0, a) if tex else (r, g, b, a))
            pos = (np.asarray(mesh.vertices["pos"], np.float64) - self.origin).astype(np.float32)
            out.append(Water(f"{t.name} ({tid})", tid, kind, pos, np.asarray(mesh.vertices["uv"], np.float32),
                             np.asarray(mesh.indices, np.int64).reshape(-1, 3), int(mesh.cells), mat))
        return out

    def apply_rules(self, col: int, row: int, path: str) -> str:
        """The rules engine of issue 47 (``wowgrass.edit.rules``) applied to the tile in memory: its
        bytes and (where the rules add sets) the catalogue replaced here, so that :meth:`grass`
        places the edited tile; nothing is written to the data. ImportError where the engine is not
        in this wowgrass. Returns what changed, for the user."""
        from wowgrass.edit import rules, rules_engine

        from wowgrass.game.tiles import read_adt

        plan = rules_engine.prepare(rules.load_rules(path), self.data, map_name=self.map_name)
        adt, raw, name = self.adt(col, row)
        context = None
        try:   # the footprints' per-map cache, where a rule uses footprints (as `effects apply` makes it)
            from wowgrass.edit.rules_apply import _context

            context = _context(plan, self.data)
        except ImportError:
            pass
        new, rep = rules_engine.apply_tile(raw, name, (col, row), plan, data=self.data, context=context)
        if getattr(plan, "catalog", None) is not None:
            self.catalog = plan.catalog
        self._adts[(col, row)] = (read_adt(new, name, self.big_alpha), new, name)
        self._files.pop((col, row), None)
        fired = ", ".join(str(o) for o in rep.fired()) or "none"
        return f"{rep.bytes_changed} bytes of tile {col},{row} changed (rules fired: {fired})"

    def _ground_height(self, col: int, row: int) -> float | None:
        """The tile's mean chunk height, or None where it cannot be read (it is reported with its tile)."""
        try:
            return _mean_height(self.adt(col, row)[0])
        except WowgrassError:
            return None

    def light(self, clock: str | None = None):
        """(SceneLight, info) of the tiles' centre at ``clock`` (default: the options'), or
        (None, why) where the tables give none. ``info["warnings"]``: what is wrong with tables
        that read (parts ignored; ones that do not belong together light the ground black)."""
        from wowgrass.game.light import (LightUnavailable, clock_text, load_light_tables, parse_clock, resolve_map,
                                         scene_light)

        clock = clock or self.opts.clock
        if clock is None:
            return None, "no hour asked"
        half = parse_clock(clock)
        warnings: list = []
        folder = getattr(self, "dbc", None)
        tables = load_light_tables(self.data, folder, warn=warnings.append)
        if tables is None:
            return None, "; ".join(warnings) or "no light tables in the data"
        try:
            map_id, directory = resolve_map(folder if folder is not None else self.data, self.map_name)
            ml = tables.map_light(map_id)
        except (LightUnavailable, FormatError, UsageError) as exc:
            return None, f"no light for map {self.map_name} ({exc})"
        centre = np.array(self.origin, np.float64)
        centre[2] = float(np.mean([z for z in (self._ground_height(c, r) for c, r in self.tiles[:16]) if z is not None]
                                  or [0.0]))
        return scene_light(ml, centre, half), {"clock": clock_text(half), "map": directory, "map_id": map_id,
                                               "build": tables.build, "warnings": [*warnings, *ml.warnings]}


def _mean_height(adt) -> float:
    return float(np.asarray(adt.positions)[:, 2].mean())


def _no_data(name: str) -> bytes:
    raise GameFileNotFound(f"{name}: no data folder given (loose ADT files with --dbc)")


def _stem(path: str) -> str:
    return Path(str(path).replace("\\", "/")).stem


def tile_error(exc: BaseException) -> str:
    """What a user reads for a tile that could not be imported."""
    if isinstance(exc, WowgrassError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"
