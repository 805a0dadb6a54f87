"""Where wowgrass keeps its caches (sample world, baked bundles), and finding loose game files.

``WOWGRASS_CACHE`` overrides the platform's user cache folder (tests point it at a temp dir).
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs


def cache_dir() -> Path:
    root = os.environ.get("WOWGRASS_CACHE")
    path = Path(root) if root else Path(platformdirs.user_cache_dir("wowgrass", appauthor=False))
    path.mkdir(parents=True, exist_ok=True)
    return path


def find_file(folder, name: str) -> Path | None:
    """The file called ``name`` in ``folder``, ignoring case (extracted game files keep no
    consistent case), or None."""
    low = name.lower()
    for cand in Path(folder).iterdir():
        if cand.name.lower() == low and cand.is_file():
            return cand
    return None


def find_table(folder, name: str) -> Path | None:
    """A .dbc table in ``folder`` or in its ``DBFilesClient`` subfolder (either may be given as --dbc)."""
    found = find_file(folder, name)
    if found is None:
        sub = next((c for c in Path(folder).iterdir() if c.name.lower() == "dbfilesclient" and c.is_dir()), None)
        found = find_file(sub, name) if sub is not None else None
    return found
