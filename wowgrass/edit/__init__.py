"""The ground-effect workbench: audit a map's ground effects, assign, remap and exclude them,
add effect sets, and pack the changed files into a patch MPQ. Built on ``wowgrass.game`` and
``wowgrass.formats``' writers."""
