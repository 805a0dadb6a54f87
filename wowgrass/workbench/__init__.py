"""The interactive layer: an edit session over a map (tools as library calls, undo and redo, live
grass, save and patch), file watching. Above ``render/`` and ``edit/``, which never import it."""
