"""Where wowgrass keeps its caches (sample world, baked bundles), and finding loose game files.

``WOWGRASS_CACHE`` overrides the platform's user cache folder (tests point it at a temp dir).
A cache folder that cannot be written (a read-only file system, no permission, a full disk that
cannot take a file) is reported once per process; the run then goes on without caching, in a
private temporary folder removed at exit. ``wowgrass bake``, whose output is the cache, asks for
:func:`writable_cache_dir` and fails instead.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import platformdirs

log = logging.getLogger(__name__)

#: configured cache path -> the folder used instead this process (its cache could not be written)
_STAND_IN: dict[str, tuple[int, Path]] = {}
_CHECKED: set[str] = set()


def cache_root() -> Path:
    """The configured cache folder (``WOWGRASS_CACHE`` or the user cache), neither made nor checked."""
    root = os.environ.get("WOWGRASS_CACHE")
    return Path(root) if root else Path(platformdirs.user_cache_dir("wowgrass", appauthor=False))


def writable_cache_dir() -> Path:
    """The cache folder, made and checked: an OutputError naming it when it cannot be written."""
    import tempfile

    from wowgrass.fileio import make_dirs
    from wowgrass.errors import OutputError

    path = cache_root()
    if str(path) in _CHECKED:
        return path
    make_dirs(path)
    try:
        fd, probe = tempfile.mkstemp(prefix=".probe-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise OutputError.from_os(path, exc) from exc
    _CHECKED.add(str(path))
    return path


def cache_dir() -> Path:
    """The cache folder; a private temporary one (reported once) when the cache cannot be written."""
    from wowgrass.errors import OutputError

    path = cache_root()
    stand_in = _STAND_IN.get(str(path))
    if stand_in is not None:  # forked workers share the parent's
        return stand_in[1]
    try:
        return writable_cache_dir()
    except OutputError as exc:
        return _without_cache(path, exc)


def _without_cache(path: Path, exc) -> Path:
    import atexit
    import shutil
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="wowgrass-nocache-"))
    _STAND_IN[str(path)] = (os.getpid(), tmp)
    pid = os.getpid()
    atexit.register(lambda: os.getpid() == pid and shutil.rmtree(tmp, ignore_errors=True))
    log.warning("%s; going on without a cache (this run's bundles and sample world are kept in %s and "
                "removed at exit; set WOWGRASS_CACHE to a writable folder to keep them)", exc, tmp)
    return tmp


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
