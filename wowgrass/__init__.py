"""wowgrass: read WoW 1.12 / 2.4.3 / 3.3.5 client data, place ground-effect grass, bake and render it.

Data flows MPQ -> formats -> placement -> bundle -> render -> cli; each layer imports only
layers to its left. Nothing here imports moderngl: only ``wowgrass.render`` does.
"""

from wowgrass.errors import FormatError, WowgrassError

__version__ = "0.1.0"
__all__ = ["FormatError", "WowgrassError", "__version__"]
