"""Atomic output: write to a temporary file beside the target, then rename over it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def current_umask() -> int:
    """The process umask, read without changing it where /proc allows (os.umask can only swap it)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: str | os.PathLike, data: bytes | bytearray | memoryview, *, durable: bool = True) -> Path:
    """Write ``data`` to ``path`` so readers see either the old file or the whole new one.

    ``durable`` flushes the data to disk before the rename. A cache entry that is checked on every
    read (a bundle's checksum) can skip it: a power cut then leaves at worst a file that fails its
    check and is rebuilt, and a bake of many tiles does not wait for the disk once per tile.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~current_umask())  # mkstemp makes 0600; a plain open() would honour the umask
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


#: image formats by file suffix (Pillow's names); anything else is an error, never a silent PNG
IMAGE_FORMATS = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG", ".bmp": "BMP", ".tga": "TGA", ".tif": "TIFF",
                 ".tiff": "TIFF", ".webp": "WEBP"}


def image_format(path) -> str:
    """The Pillow format a file name's suffix asks for; UsageError for an unknown suffix."""
    from wowgrass.errors import UsageError

    fmt = IMAGE_FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise UsageError(f"{path}: the image format follows the file's suffix; use one of "
                         + ", ".join(sorted(IMAGE_FORMATS)))
    return fmt


def write_image(path, pixels) -> Path:
    """An (h, w, 3|4) uint8 array (or a PIL image) written atomically in the format its suffix names."""
    import io

    from PIL import Image

    fmt = image_format(path)
    img = pixels if isinstance(pixels, Image.Image) else Image.fromarray(pixels)
    if fmt in ("JPEG", "BMP") and img.mode == "RGBA":
        img = img.convert("RGB")
    buf = io.BytesIO()
    img.save(buf, format=fmt)
    return write_atomic(path, buf.getvalue())


def temp_dir(prefix: str, parent) -> Path:
    """A new private-named folder in ``parent`` with the umask's permissions (mkdtemp makes 0700,
    which would stick to a folder later renamed into place)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    os.chmod(path, 0o777 & ~current_umask())
    return path
