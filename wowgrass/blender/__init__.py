"""wowgrass in Blender (issue 50, docs/blender.md): :mod:`.zone` makes a zone's arrays (no bpy),
:mod:`.build` makes them Blender data, :mod:`.addon` is the extension's operator and panel,
:mod:`.headless` runs an import for ``wowgrass blender import``, :mod:`.package` builds the zip."""

GRASS_GROUP = "WoW grass instances"   # the geometry-nodes group that instances a tile's grass
