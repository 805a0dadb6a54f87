"""``wowgrass patch``: ship changed files as a patch MPQ the client loads."""

from __future__ import annotations

import click

from wowgrass.cli.common import build_option, echo_json, json_option, note


@click.group()
def patch():
    """Pack changed files into a patch MPQ for a 1.12, 2.4.3 or 3.3.5 client."""


@patch.command("build")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.option("-o", "--output", "out", required=True, type=click.Path(dir_okay=False),
              help="The archive to write: Data/patch-N.MPQ, or Data/<loc>/patch-<loc>-N.MPQ for 2.4.3/3.3.5.")
@build_option("The client the patch is for (default: the layout of a GroundEffectTexture.dbc in FOLDER).")
@click.option("--locale", metavar="xxXX", default=None,
              help="2.4.3/3.3.5: the locale folder the patch is for (a locale patch is patch-<loc>-N.MPQ).")
@click.option("--data", "data_path", type=click.Path(exists=True, file_okay=False), default=None,
              help="A client's Data folder to check the archive against as if it lay there (mounted? "
                   "its rank? files a higher archive hides?).")
@click.option("-f", "--force", is_flag=True, hidden=True, help="(An existing archive is always replaced.)")
@json_option
def build(folder, out, build, locale, force, data_path, as_json):
    """Pack every file under FOLDER, laid out as the client's paths (DBFilesClient/..., World/Maps/...:
    what `effects assign|new-set -o DIR` write), into the patch archive -o FILE.MPQ.

    The archive is MPQ format v1 with zlib sectors and a (listfile), read by every client here. The
    clients mount Data/patch-N.MPQ (N one character: patch-4 ranks above patch-3) and, in 2.4.3/3.3.5,
    Data/<loc>/patch-<loc>-N.MPQ above all; a warning says when the name would not be loaded, or when
    (2.4.3/3.3.5) DBC tables sit in a Data patch that the locale archives' copies hide. Written into a
    client's Data folder (or checked against --data D as if it lay there, by its name), the archive
    chain is opened to check that it is mounted and wins. Nothing
    is written unless the whole archive is; an existing one is replaced (said on stderr), as every
    output is. Only regular files are read (a FIFO or a device is skipped with a warning).
    """
    from wowgrass.edit.patch import build_patch

    from wowgrass.cli.common import output_path

    output_path(out)   # writable? replacing? (said before any work)
    result = build_patch(folder, out, build=build, locale=locale, data=data_path)
    if as_json:
        echo_json(result.to_dict())
        return
    from wowgrass.edit.patch import patch_notes

    for line in patch_notes(result.to_dict(), out):   # the window's Build patch says the same
        note(line)
    for f in result.files:
        click.echo(f)
