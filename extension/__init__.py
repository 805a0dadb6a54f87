"""wowgrass for Blender: File > Import > WoW zone, and the WoW panel (N sidebar) on an imported tile.

The extension's code is wowgrass itself (bundled as a wheel with platformdirs; numpy is
Blender's own): :mod:`wowgrass.blender.addon`. See docs/blender.md."""


def register():
    from wowgrass.blender import addon

    addon.register()


def unregister():
    from wowgrass.blender import addon

    addon.unregister()
