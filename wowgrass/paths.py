"""Where wowgrass keeps its caches (sample world, baked bundles).

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
