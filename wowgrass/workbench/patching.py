"""The window's Build patch: the rules and notes of ``patch build`` (issue 49, item 7).

The default name is one the client loads, above every patch of the data's client
(``edit.patch.default_patch_name``: ``patch-enUS-4.MPQ`` over a 3.3.5 client with patch-enUS-3);
a relative name is written in the current folder and said with its whole path; an existing file is
replaced, and said ("replacing"); then the same lines ``patch build`` prints (``edit.patch.patch_notes``).
"""

from __future__ import annotations

from pathlib import Path


def default_patch_path(session) -> str:
    """The Build patch field's first value: a name the data's client loads (see the module docstring)."""
    from wowgrass.edit.patch import default_patch_name

    build = getattr(getattr(session, "catalog", None), "build", None)
    return default_patch_name(session.data, build if build in ("1.12", "2.4.3", "3.3.5") else None)


def build_window_patch(files, out_path, say) -> dict | None:
    """Pack the changes of ``files`` (a :class:`~.disk.SessionFiles`) into ``out_path`` (empty: the
    default name, in the current folder), saying each line through ``say``; the result's dict, or
    None when it failed (said)."""
    from wowgrass.edit.patch import patch_notes
    from wowgrass.fileio import check_output_file

    name = str(out_path or "").strip() or default_patch_path(files.session)
    out = Path(name).expanduser()
    out = out if out.is_absolute() else Path.cwd() / out
    try:
        if check_output_file(out):
            say(f"note: {out} exists: replacing it")
        res = files.build_patch(out)
    except Exception as exc:  # a name that is no .MPQ, a folder not writable, nothing changed: said
        say(f"patch failed: {exc}")
        return None
    for line in patch_notes(res, out):
        say(line)
    return res
