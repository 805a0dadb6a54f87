"""Exports for other tools: glTF 2.0 tiles and models (:mod:`.gltf`, :mod:`.scene`, :mod:`.terrain`,
:mod:`.sources`) and placement rows as CSV/JSON (:mod:`.placements`). See docs/export.md."""
