"""The extension's Blender side: File > Import > WoW zone (a modal operator: progress, Esc cancels
and removes what it made) and the WoW panel on an imported tile (re-scatter, show or hide each
grass model, the client's draw capacity, the rules). Errors go to Blender's report (status bar and
info log), never a traceback."""

from __future__ import annotations

import json

import bpy
from bpy.props import BoolProperty, EnumProperty, IntProperty, StringProperty

from wowgrass.errors import WowgrassError

from .zone import PLACEMENTS, ZoneOptions

BUILDS = (("AUTO", "From the data", "The build the data says"), ("1.12", "1.12", ""), ("2.4.3", "2.4.3", ""),
          ("3.3.5", "3.3.5", ""))
PLACEMENT_ITEMS = (("client", "Client", "The clients' scatter and draw capacity"),
                   ("coverage", "Coverage", "Every cell covered (wowgrass's own)"))
RULES_NAME = "wowgrass-rules.toml"   # the rules engine's file (docs/rules.md on branch rules)


def zone_options(op) -> ZoneOptions:
    """The operator's fields as :class:`ZoneOptions` (tiles: ranges, or a tile and a radius)."""
    data = [p for p in [op.directory, *op.more_data.split(";")] if p.strip()]
    files = [p.strip() for p in op.adt_files.split(";") if p.strip()]
    if op.radius > 0 or op.tiles.strip() == "":
        c, r = (int(v) for v in (op.centre or op.tiles or "32,32").split(","))
        tiles = [f"{c - op.radius}:{c + op.radius},{r - op.radius}:{r + op.radius}"]
    else:
        tiles = op.tiles.split()
    return ZoneOptions(data=[p.strip() for p in data], adt_files=files, dbc=op.dbc or None,
                       map_name=op.map_name or None, tiles=[] if files else tiles,
                       build=None if op.build == "AUTO" else op.build, placement=op.placement,
                       picks=op.picks or None, capacity=op.capacity, clock=op.clock or None,
                       terrain=op.terrain, liquids=op.liquids, wmos=op.wmos, doodads=op.doodads, grass=op.grass)


def _error_text(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, (WowgrassError, OSError)) else f"{type(exc).__name__}: {exc}"


class IMPORT_SCENE_OT_wow_zone(bpy.types.Operator):
    """Import WoW tiles: terrain, water, buildings, doodads and the ground effects as instances"""

    bl_idname = "import_scene.wow_zone"
    bl_label = "Import WoW zone"
    bl_options = {"REGISTER", "UNDO"}

    directory: StringProperty(name="Data folder", subtype="DIR_PATH",
                              description="The client's Data folder or a loose folder (empty: the sample world)")
    filter_folder: BoolProperty(default=True, options={"HIDDEN"})
    more_data: StringProperty(name="Laid over it", description="More data folders over the first, separated by ;")
    adt_files: StringProperty(name="ADT files", description="Loose ADT files instead of a map's tiles, separated by ;")
    dbc: StringProperty(name="Tables", subtype="DIR_PATH", description="A folder of loose .dbc tables (with ADT files)")
    map_name: StringProperty(name="Map", description="The map (empty: the data's only map)")
    tiles: StringProperty(name="Tiles", default="32,32",
                          description="C,R or ranges C0:C1,R0:R1, several separated by spaces")
    centre: StringProperty(name="Around tile", description="C,R: the tiles within the radius of this one")
    radius: IntProperty(name="Radius", default=0, min=0, max=8)
    build: EnumProperty(name="Build", items=BUILDS, default="AUTO")
    placement: EnumProperty(name="Placement", items=PLACEMENT_ITEMS, default="client")
    picks: IntProperty(name="Picks", default=0, min=0, max=256, description="Client picks per chunk (0: the client's)")
    capacity: BoolProperty(name="Draw capacity", default=True, description="Drop what the client's draw capacity drops")
    clock: StringProperty(name="Time", default="12:00", description="HH:MM: the zone's light at this hour")
    terrain: BoolProperty(name="Terrain", default=True)
    liquids: BoolProperty(name="Water", default=True)
    wmos: BoolProperty(name="Buildings", default=True)
    doodads: BoolProperty(name="Doodads", default=True)
    grass: BoolProperty(name="Grass", default=True)

    _job = None
    _steps = None
    _timer = None

    def invoke(self, context, event):
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}

    def execute(self, context):
        from .build import ZoneImport

        try:
            job = ZoneImport(zone_options(self), context.scene)
        except Exception as exc:   # a bad folder, map or tile text: nothing made yet
            self.report({"ERROR"}, f"WoW zone: {_error_text(exc)}")
            return {"CANCELLED"}
        if bpy.app.background or context.window is None:
            try:
                job.run()
            except Exception as exc:
                job.cancel()
                self.report({"ERROR"}, f"WoW zone: {_error_text(exc)}; nothing imported")
                return {"CANCELLED"}
            return self._finish(job)
        self._job, self._steps = job, job.steps()
        wm = context.window_manager
        wm.progress_begin(0, job.total())
        self._timer = wm.event_timer_add(0.01, window=context.window)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        wm = context.window_manager
        if event.type == "ESC":
            self._end(context)
            self._job.cancel()
            self.report({"WARNING"}, "WoW zone: cancelled; nothing imported")
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"PASS_THROUGH"}
        try:
            done, total, what = next(self._steps)
            wm.progress_update(done)
            context.workspace.status_text_set(f"WoW zone: {what} ({done}/{total}); Esc cancels")
            return {"RUNNING_MODAL"}
        except StopIteration:
            self._end(context)
            return self._finish(self._job)
        except Exception as exc:
            self._end(context)
            self._job.cancel()
            self.report({"ERROR"}, f"WoW zone: {_error_text(exc)}; nothing imported")
            return {"CANCELLED"}

    def _end(self, context):
        wm = context.window_manager
        if self._timer is not None:
            wm.event_timer_remove(self._timer)
        wm.progress_end()
        context.workspace.status_text_set(None)

    def _finish(self, job):
        job.close()
        for (c, r), why in sorted(job.errors.items()):
            self.report({"WARNING"}, f"WoW zone: tile {c},{r} left out: {why}")
        for w in job.light_warnings:
            self.report({"WARNING"}, f"WoW zone: {w}")
        ok = len(job.zone.tiles) - len(job.errors)
        if not ok:
            job.cancel()
            self.report({"ERROR"}, "WoW zone: no tile could be imported")
            return {"CANCELLED"}
        self.report({"INFO"}, f"WoW zone: {ok} tile(s) of {job.zone.map_name} in {job.seconds.get('total', 0):.1f} s")
        return {"FINISHED"}

    def draw(self, context):
        col = self.layout.column()
        for name in ("more_data", "adt_files", "dbc", "map_name", "tiles", "centre", "radius", "build", "placement", "picks", "capacity",
                     "clock"):
            col.prop(self, name)
        row = col.row(align=True)
        for name in ("terrain", "liquids", "wmos", "doodads", "grass"):
            row.prop(self, name, toggle=True)


# ----------------------------------------------------------------------------- the panel


def tile_of(obj):
    """(root collection, tile collection, grass object) of the tile ``obj`` belongs to, or None."""
    if obj is None:
        return None
    for coll in bpy.data.collections:
        if "wow_tile" not in coll:
            continue
        kids = [coll, *coll.children]
        if any(obj.name in k.objects for k in kids):
            root = next((c for c in bpy.data.collections if "wow_map" in c and coll.name in c.children), None)
            grass = next((o for k in kids for o in k.objects if o.get("wow_grass")), None)
            return root, coll, grass
    return None


def rescatter(root, tile_coll, grass, *, placement: str, picks: int | None, capacity: bool, zone=None):
    """Bake the tile again with another placement and put the points on its grass object."""
    from .build import Library, place_grass
    from .zone import Zone

    opts = ZoneOptions(**json.loads(root["wow_options"]))
    col, row = (int(v) for v in tile_coll["wow_tile"])
    opts.tiles = [f"{col},{row}"]
    z = zone or Zone(opts)
    try:
        lib = Library(z, root.name, models=bpy.data.collections.get(f"{root.name} models"))
        g = z.grass(col, row, placement=placement, picks=picks, capacity=capacity)
        coll = grass.users_collection[0] if grass is not None else next(c for c in tile_coll.children
                                                                      if c.name.startswith("Grass"))
        return place_grass(lib, col, row, coll, g)
    finally:
        if zone is None:
            z.close()


def rules_file(root) -> str | None:
    """The rules file beside the data (the top data folder first), or None."""
    from pathlib import Path

    opts = json.loads(root["wow_options"])
    for folder in reversed(opts.get("data") or []):
        p = Path(folder) / RULES_NAME
        if p.is_file():
            return str(p)
    return None


class WOW_OT_rescatter(bpy.types.Operator):
    """Place the tile's grass again with this placement, picks and draw capacity"""

    bl_idname = "wow.rescatter"
    bl_label = "Re-scatter"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        found = tile_of(context.active_object)
        if found is None or found[0] is None:
            self.report({"ERROR"}, "WoW: select an object of an imported tile")
            return {"CANCELLED"}
        s = context.scene.wow_grass
        try:
            obj = rescatter(*found, placement=s.placement, picks=s.picks or None, capacity=s.capacity)
        except Exception as exc:
            self.report({"ERROR"}, f"WoW re-scatter: {_error_text(exc)}")
            return {"CANCELLED"}
        self.report({"INFO"}, f"WoW: {len(obj.data.vertices):,} grass points ({s.placement})")
        return {"FINISHED"}


class WOW_OT_toggle_model(bpy.types.Operator):
    """Show or hide this grass model on the tile"""

    bl_idname = "wow.toggle_grass_model"
    bl_label = "Show or hide"
    bl_options = {"REGISTER", "UNDO"}
    index: IntProperty()

    def execute(self, context):
        from .build import set_hidden

        found = tile_of(context.active_object)
        if found is None or found[2] is None:
            self.report({"ERROR"}, "WoW: the selected tile has no grass")
            return {"CANCELLED"}
        grass = found[2]
        hidden = set(grass.get("wow_hidden", []))
        hidden ^= {self.index}
        set_hidden(grass, hidden)
        return {"FINISHED"}


class WOW_OT_apply_rules(bpy.types.Operator):
    """Apply the rules file beside the data to this tile and re-scatter its grass"""

    bl_idname = "wow.apply_rules"
    bl_label = "Apply the rules"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        found = tile_of(context.active_object)
        if found is None or found[0] is None:
            self.report({"ERROR"}, "WoW: select an object of an imported tile")
            return {"CANCELLED"}
        path = rules_file(found[0])
        if path is None:
            self.report({"ERROR"}, f"WoW: no {RULES_NAME} beside the data")
            return {"CANCELLED"}
        try:
            from wowgrass.edit import rules  # noqa: F401 - the rules engine (branch rules, issue 47)
        except ImportError:
            self.report({"ERROR"}, "WoW: this wowgrass has no rules engine (wowgrass.edit.rules); "
                                   "run `wowgrass effects apply` and re-scatter")
            return {"CANCELLED"}
        try:
            msg = apply_rules(found, path)
        except Exception as exc:
            self.report({"ERROR"}, f"WoW rules: {_error_text(exc)}")
            return {"CANCELLED"}
        self.report({"INFO"}, msg)
        return {"FINISHED"}


def apply_rules(found, path: str) -> str:
    """The rules engine's edit of the tile (in memory), then its grass placed from the edited tile."""
    from .zone import Zone

    root, tile_coll, grass = found
    opts = ZoneOptions(**json.loads(root["wow_options"]))
    col, row = (int(v) for v in tile_coll["wow_tile"])
    opts.tiles = [f"{col},{row}"]
    with Zone(opts) as z:
        what = z.apply_rules(col, row, path)
        obj = rescatter(root, tile_coll, grass, placement=grass.get("wow_placement", opts.placement),
                        picks=opts.picks, capacity=opts.capacity, zone=z)
    return f"WoW: rules {path}: {what}; {len(obj.data.vertices):,} grass points"


class WowGrassSettings(bpy.types.PropertyGroup):
    placement: EnumProperty(name="Placement", items=PLACEMENT_ITEMS, default="client")
    picks: IntProperty(name="Picks", default=0, min=0, max=256, description="Client picks per chunk (0: the client's)")
    capacity: BoolProperty(name="Draw capacity", default=True)


class VIEW3D_PT_wow_tile(bpy.types.Panel):
    bl_label = "WoW tile"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "WoW"

    def draw(self, context):
        layout = self.layout
        found = tile_of(context.active_object)
        if found is None:
            layout.label(text="Select an object of an imported tile")
            return
        root, tile_coll, grass = found
        layout.label(text=f"{root['wow_map'] if root else ''} tile {tuple(tile_coll['wow_tile'])}")
        s = context.scene.wow_grass
        col = layout.column()
        col.prop(s, "placement")
        col.prop(s, "picks")
        col.prop(s, "capacity")
        col.operator("wow.rescatter")
        if grass is not None:
            col.label(text=f"{len(grass.data.vertices):,} points, {grass.get('wow_placement', '')}")
            hidden = set(grass.get("wow_hidden", []))
            for i, path in enumerate(grass.get("wow_grass_models", [])):
                op = col.operator("wow.toggle_grass_model", text=path.replace("\\", "/").split("/")[-1],
                                  icon="HIDE_ON" if i in hidden else "HIDE_OFF", depress=i not in hidden)
                op.index = i
        row = layout.row()
        row.enabled = root is not None and rules_file(root) is not None
        row.operator("wow.apply_rules")


def menu_import(self, context):
    self.layout.operator(IMPORT_SCENE_OT_wow_zone.bl_idname, text="WoW zone (wowgrass)")


def save_pre(*_args):
    from .build import pack_generated

    pack_generated()


CLASSES = (IMPORT_SCENE_OT_wow_zone, WOW_OT_rescatter, WOW_OT_toggle_model, WOW_OT_apply_rules, WowGrassSettings,
           VIEW3D_PT_wow_tile)


def register():
    for c in CLASSES:
        bpy.utils.register_class(c)
    bpy.types.Scene.wow_grass = bpy.props.PointerProperty(type=WowGrassSettings)
    bpy.types.TOPBAR_MT_file_import.append(menu_import)
    if save_pre not in bpy.app.handlers.save_pre:
        bpy.app.handlers.save_pre.append(save_pre)


def unregister():
    if save_pre in bpy.app.handlers.save_pre:
        bpy.app.handlers.save_pre.remove(save_pre)
    bpy.types.TOPBAR_MT_file_import.remove(menu_import)
    del bpy.types.Scene.wow_grass
    for c in reversed(CLASSES):
        bpy.utils.unregister_class(c)


__all__ = ["PLACEMENTS", "register", "unregister", "zone_options", "rescatter", "tile_of"]
