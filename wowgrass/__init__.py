"""wowgrass: read WoW 1.12 / 2.4.3 / 3.3.5 client data, place ground-effect grass, bake and render it.

Data flows MPQ -> formats -> placement -> bundle -> render -> cli; each layer imports only
layers to its left. Nothing here imports moderngl: only ``wowgrass.render`` does.
"""

__version__ = "0.1.0"
__all__ = ["FormatError", "WowgrassError", "__version__"]


def __getattr__(name):
    # the errors load on first use: importing the package runs nothing else, so the program's
    # SIGINT handler (the first line of __main__.py) is in place a moment after the script starts
    if name in ("FormatError", "WowgrassError"):
        from wowgrass import errors

        return getattr(errors, name)
    raise AttributeError(f"module 'wowgrass' has no attribute {name!r}")
