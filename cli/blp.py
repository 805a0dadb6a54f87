"""``wowgrass blp``: inspect BLP textures and convert them to PNG (or PNG to BLP2)."""

from __future__ import annotations

import io
from pathlib import Path

import click
import numpy as np

from wowgrass.cli.common import echo_json, json_option, note, output_path
from wowgrass.errors import UsageError

ENCODINGS = ("dxt1", "dxt3", "dxt5", "palette", "raw")


@click.group()
def blp():
    """Inspect and convert BLP textures (BLP1, BLP2)."""


@blp.command()
@click.argument("file", type=click.Path(dir_okay=False))
@json_option
def info(file, as_json):
    """Print a BLP's version, size, encoding, alpha depth and mip levels (header only)."""
    from wowgrass.formats.blp import BlpImage

    img = BlpImage.from_bytes(Path(file).read_bytes(), file)
    out = img.info()
    out = {"file": out.pop("path"), **out}   # docs/cli.md: `file` is the file a command read
    if as_json:
        echo_json(out)
        return
    click.echo(f"{file}: BLP{img.version} {img.width}×{img.height} {img.encoding}, alpha depth "
               f"{img.alpha_depth}, {img.mip_count} mip level(s)")
    for m in out["mip_levels"]:
        click.echo(f"  mip {m['level']}: {m['width']}×{m['height']}, {m['size']} bytes at 0x{m['offset']:X}")


@blp.command()
@click.argument("src", type=click.Path(dir_okay=False))
@click.argument("old_dst", required=False, type=click.Path(dir_okay=False), metavar="")
@click.option("-o", "--output", "dst", type=click.Path(dir_okay=False),
              help="The file to write: an image (.png, .jpg, ...: the suffix names the format) or a .blp.")
@click.option("--mip", default=0, show_default=True, help="Mip level to write (BLP → image).")
@click.option("--encoding", type=click.Choice(ENCODINGS), default="dxt5", show_default=True,
              help="Encoding when writing a BLP (image → BLP).")
@click.option("--no-mipmaps", is_flag=True, help="Write only mip 0 (image → BLP).")
@json_option
def convert(src, old_dst, dst, mip, encoding, no_mipmaps, as_json):
    """Convert SRC.blp to an image (-o FILE.png, or any format Pillow writes by its suffix), or an
    image to a BLP2 (-o FILE.blp). The output's folder must exist, as for every -o."""
    from PIL import Image, UnidentifiedImageError

    from wowgrass.fileio import write_atomic
    from wowgrass.formats.blp import BlpImage, sniff, write_blp

    if old_dst is not None:   # `blp convert SRC DST`, the old form
        if dst is not None:
            raise UsageError("give the output once: -o FILE")
        note("note: `blp convert SRC DST` is now `blp convert SRC -o DST`")
        dst = old_dst
    if dst is None:
        raise UsageError("give the file to write with -o FILE (an image, or a .blp)")
    output_path(dst)
    data = Path(src).read_bytes()
    if sniff(data[:4]):
        img = BlpImage.from_bytes(data, src)
        fmt = Image.registered_extensions().get(Path(dst).suffix.lower())
        if fmt is None:
            raise UsageError(f"cannot tell the image format of {dst} from its suffix")
        buf = io.BytesIO()
        img.image(mip).save(buf, fmt)
        write_atomic(dst, buf.getvalue())
        w, h = img.mip_size(mip)
        if as_json:
            echo_json({"file": str(dst), "source": str(src), "direction": "blp-to-image", "format": fmt,
                       "width": w, "height": h, "mip": mip, "mip_level_count": img.mip_count,
                       "size": len(buf.getvalue())})
        note(f"wrote {dst} ({w}×{h}, mip {mip} of {img.mip_count})")
        return
    if Path(dst).suffix.lower() != ".blp":
        raise UsageError(f"{src} is not a BLP; to encode an image give DST a .blp suffix")
    try:
        with Image.open(io.BytesIO(data)) as im:
            rgba = np.asarray(im.convert("RGBA"))
    except (UnidentifiedImageError, OSError) as exc:
        raise UsageError(f"{src}: not a BLP and not an image Pillow reads ({exc})") from None
    body = write_blp(rgba, encoding, mipmaps=not no_mipmaps)
    write_atomic(dst, body)
    if as_json:
        echo_json({"file": str(dst), "source": str(src), "direction": "image-to-blp", "format": "BLP2",
                   "width": int(rgba.shape[1]), "height": int(rgba.shape[0]), "encoding": encoding,
                   "mip_level_count": BlpImage.from_bytes(body, str(dst)).mip_count, "size": len(body)})
    note(f"wrote {dst} ({rgba.shape[1]}×{rgba.shape[0]} {encoding})")
