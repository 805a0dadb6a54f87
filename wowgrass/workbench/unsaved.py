"""Unsaved edits are never lost silently (issue 49, item 5).

* Quitting the window (Esc, the close button) with unsaved edits asks, in the window: save (to the
  Changes panel's folder) and quit, discard and quit, or cancel. Keys S, D and C (or Esc) answer too.
* Any other end with unsaved edits (a signal: SIGINT, SIGTERM, SIGHUP; ``--quit-after``; an error
  out of the frame loop) writes a recovery file, and says where, on stderr.
* The next ``view`` of the same data (the same data folders and map) finds it: a line on stderr,
  and the window offers to restore it (R), to discard it (D) or to decide later (L: it is kept).
  Restored edits are one undoable step; the file goes once they are saved or discarded.

A recovery file is a zip under ``<cache>/recovery/<key>/``: ``manifest.json`` (map, data folders,
when, the history's labels, each file's sha256 and that of the data's own file then) and the
files' bytes under their game paths. A file whose data changed on disk since is not restored
(said), as saving over another editor's work would not be either.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from wowgrass.errors import FormatError

FORMAT = 1
ASK_KEYS = {"save": "S", "discard": "D", "cancel": "C"}
OFFER_KEYS = {"restore": "R", "discard": "D", "later": "L"}


def _sha(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def data_folders(data) -> list[str]:
    """The folders (and files) that make ``data``: its root, its layers, a ``view ADT``'s file."""
    from wowgrass.edit.batch import base_data

    d = base_data(data)
    out = [str(Path(d.root).resolve())] if getattr(d, "root", None) is not None else []
    out += [str(Path(p).resolve()) for p in (getattr(d, "layers", None) or ())]
    out += sorted(str(Path(f).resolve()) for _gp, f in (getattr(d, "_files", None) or {}).values())
    return out


def data_key(data, map_name: str) -> str:
    """Which data a recovery file belongs to: the data's folders and the map."""
    blob = json.dumps([data_folders(data), str(map_name).lower()])
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def recovery_dir(data, map_name: str) -> Path:
    from wowgrass.paths import cache_dir

    return cache_dir() / "recovery" / data_key(data, map_name)


def find_recovery(data, map_name: str) -> list[Path]:
    """The recovery files of this data, newest first."""
    d = recovery_dir(data, map_name)
    if not d.is_dir():
        return []
    return sorted(d.glob("*.zip"), key=lambda p: p.name, reverse=True)


def write_recovery(session, *, reason: str = "") -> Path | None:
    """The session's unsaved edits into a new recovery file (None: nothing unsaved)."""
    from wowgrass.fileio import make_dirs, write_atomic

    files = session.unsaved_files()
    if not files:
        return None
    entries = {}
    for gp, raw in files.items():
        try:
            source = _sha(session.data.read(gp))
        except Exception:  # noqa: BLE001 - a file the data lost: restored without the check
            source = None
        entries[gp] = {"sha256": _sha(raw), "source_sha256": source, "size": len(raw)}
    manifest = {"format": FORMAT, "map": session.map_name, "data": data_folders(session.data),
                "written": time.strftime("%Y-%m-%d %H:%M:%S"), "reason": reason, "history": list(session.history),
                "files": entries}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("manifest.json", json.dumps(manifest, indent=1))
        for gp, raw in files.items():
            z.writestr("files/" + gp.replace("\\", "/"), raw)
    folder = make_dirs(recovery_dir(session.data, session.map_name))
    path = folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.zip"
    write_atomic(path, buf.getvalue())
    return path


@dataclass
class Recovery:
    path: Path
    manifest: dict
    files: dict  # game path -> bytes

    def summary(self) -> str:
        tiles = [gp.rsplit("\\", 1)[-1] for gp in self.files if gp.lower().endswith(".adt")]
        tables = [gp.rsplit("\\", 1)[-1] for gp in self.files if not gp.lower().endswith(".adt")]
        parts = []
        if tiles:
            parts.append(f"{len(tiles)} tile(s): {', '.join(tiles[:4])}" + (", ..." if len(tiles) > 4 else ""))
        if tables:
            parts.append(", ".join(tables))
        n = len(self.manifest.get("history") or [])
        return f"{'; '.join(parts)} ({n} edit(s), {self.manifest.get('written', '?')})"


def read_recovery(path) -> Recovery:
    """A recovery file, checked (its manifest, each file's sha256): a FormatError otherwise."""
    path = Path(path)
    try:
        with zipfile.ZipFile(path) as z:
            manifest = json.loads(z.read("manifest.json"))
            files = {}
            for gp, e in (manifest.get("files") or {}).items():
                raw = z.read("files/" + gp.replace("\\", "/"))
                if _sha(raw) != e.get("sha256"):
                    raise FormatError(f"{gp}: its bytes do not match the manifest's sha256", path=str(path))
                files[gp] = raw
    except (zipfile.BadZipFile, KeyError, ValueError, OSError) as exc:
        raise FormatError(f"not a readable recovery file ({exc})", path=str(path)) from exc
    if manifest.get("format") != FORMAT:
        raise FormatError(f"recovery format {manifest.get('format')!r}, not {FORMAT}", path=str(path))
    return Recovery(path, manifest, files)


def restore(session, rec: Recovery):
    """Put the recovery's files into the session (one undoable step): ``(change, notes)``; a file
    whose data changed on disk since the recovery was written is left out (a note says so)."""
    take, notes = {}, []
    for gp, raw in rec.files.items():
        want = rec.manifest["files"][gp].get("source_sha256")
        try:
            now = _sha(session.data.read(gp))
        except Exception:  # noqa: BLE001
            now = None
        if want is not None and now != want:
            notes.append(f"{gp} changed on disk since the edits were kept: not restored")
            continue
        take[gp] = raw
    change = session.restore_files(take, f"restored {len(take)} file(s) kept {rec.manifest.get('written', '')}") \
        if take else None
    return change, notes


class UnsavedGuard:
    """The quit question, the recovery offer and the recovery file of one window's workbench."""

    SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None)

    def __init__(self, bench):
        self.bench = bench
        self.asking = False  # the quit question is open
        self.offer: Recovery | None = None  # a recovery file offered
        self.more_offers = 0
        self.closing = False  # answered: the window may close
        self.discarded = False  # the user chose to lose the edits
        self.problem: str | None = None  # what went wrong with the last answer (a save failed)
        self.restored: Path | None = None  # the recovery restored (removed once saved or discarded)
        self.written: Path | None = None
        self._old_handlers: dict = {}
        self.installed = False  # the bench was installed in a window (install_signals)

    # -- state --
    def unsaved(self) -> list[str]:
        s = self.bench.session
        return [f"tile {c},{r}" for c, r in s.changed_tiles] + [p.rsplit("\\", 1)[-1] for p in s.changed_tables]

    @property
    def open(self) -> bool:
        """A question is on screen: the view's keys wait."""
        return self.asking or self.offer is not None

    # -- quitting --
    def may_close(self) -> bool:
        """The window wants to close (Esc, the close button): True to let it, False to ask first."""
        if self.closing or self.discarded:
            return True
        what = self.unsaved()
        if not what:
            self.closing = True
            return True
        if not self.asking:
            self.asking, self.problem = True, None
            self.bench.ui_version += 1
            self.bench.log(f"quit: unsaved edits ({', '.join(what)}): the window asks: save to "
                           f"{self.bench.save_dir} (S), discard (D) or cancel (C)")
        return False

    def answer(self, choice: str) -> None:
        b = self.bench
        b.ui_version += 1
        if choice == "cancel":
            self.asking = False
            b.say("quit cancelled")
            return
        if choice == "discard":
            self.asking, self.discarded = False, True
            b.say(f"discarded {len(self.unsaved())} unsaved file(s)")
            self._drop_restored()
            self._close_window()
            return
        if choice == "save":
            res = b.save(b.save_dir)
            if res is None or self.unsaved():
                self.problem = (b.messages[-1] if b.messages else "the save failed") + ": nothing lost, the window stays"
                return
            self.asking = False
            self.closing = True
            self._close_window()

    def _close_window(self):
        c = self.bench.controls
        if c is not None:
            c.glfw.set_window_should_close(c.window, True)

    # -- the end of the window --
    def on_close(self) -> Path | None:
        """The window ends: unsaved edits nobody discarded go into a recovery file."""
        self.restore_signals()
        if not self.installed:  # never in a window (a library or test bench): nothing to offer later
            return None
        if self.discarded or not self.unsaved():
            if not self.unsaved() and self.restored is not None:
                self._drop_restored()
            return None
        try:
            self.written = write_recovery(self.bench.session, reason="the window ended with unsaved edits")
        except Exception as exc:  # noqa: BLE001 - said; the edits are gone only if this fails too
            self.bench.log(f"error: unsaved edits could not be kept: {exc}")
            return None
        self.bench.log(f"unsaved edits kept in {self.written}: the next `wowgrass view` of this data offers "
                       "to restore them")
        return self.written

    def saved(self) -> None:
        """A save went through: a restored recovery whose edits are all saved is done with."""
        if not self.unsaved():
            self._drop_restored()

    def _drop_restored(self):
        if self.restored is not None:
            self.restored.unlink(missing_ok=True)
            self.restored = None

    # -- signals: the frame loop ends through KeyboardInterrupt, so on_close runs --
    def install_signals(self) -> None:
        import threading

        self.installed = True
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in self.SIGNALS:
            def handler(signum, _frame):
                exc = KeyboardInterrupt(f"stopped by {signal.Signals(signum).name}")
                exc.signum = signum
                raise exc
            try:
                self._old_handlers[sig] = signal.signal(sig, handler)
            except (ValueError, OSError):  # not the main thread of the interpreter
                pass

    def restore_signals(self) -> None:
        for sig, old in self._old_handlers.items():
            try:
                signal.signal(sig, old)
            except (ValueError, OSError, TypeError):
                pass
        self._old_handlers.clear()

    # -- the offer at start --
    def look_for_recovery(self) -> None:
        b = self.bench
        found = find_recovery(b.session.data, b.session.map_name)
        for path in found:
            try:
                rec = read_recovery(path)
            except FormatError as exc:
                b.log(f"warning: {exc}: left where it is")
                continue
            self.offer, self.more_offers = rec, len(found) - 1
            b.ui_version += 1
            b.log(f"note: unsaved edits of an earlier session are kept in {path} ({rec.summary()}): the window "
                  "offers to restore them (R), discard them (D) or decide later (L)")
            return

    def answer_offer(self, choice: str) -> None:
        b, rec = self.bench, self.offer
        if rec is None:
            return
        b.ui_version += 1
        self.offer = None
        if choice == "later":
            b.say(f"kept {rec.path} for later")
            return
        if choice == "discard":
            rec.path.unlink(missing_ok=True)
            b.say(f"discarded the kept edits ({rec.path.name})")
            return
        change, notes = restore(b.session, rec)  # its Change reaches the scene through the session's subscription
        for n in notes:
            b.say(n)
        if change is not None:
            self.restored = rec.path
            b.say(f"restored {len(rec.files) - len(notes)} file(s) from {rec.path.name}")

    # -- in the window --
    def draw(self, imgui, size) -> None:
        """The question or the offer, a modal window in the middle (Dear ImGui)."""
        if not self.open:
            return
        title = "Unsaved edits##quit" if self.asking else "Edits kept from an earlier session##offer"
        imgui.open_popup(title)
        w, h = size
        imgui.set_next_window_pos(imgui.ImVec2(w * 0.5, h * 0.5), imgui.Cond_.always, imgui.ImVec2(0.5, 0.5))
        imgui.set_next_window_size(imgui.ImVec2(min(560, w - 20), 0))
        flags = imgui.WindowFlags_.no_move | imgui.WindowFlags_.no_saved_settings | imgui.WindowFlags_.no_resize
        if not imgui.begin_popup_modal(title, None, flags)[0]:
            return
        choice = None
        if self.asking:
            imgui.text_wrapped("These edits are not saved: " + ", ".join(self.unsaved()))
            imgui.text_wrapped(f"Save them to {self.bench.save_dir} (the Changes panel's folder) before quitting?")
            if self.problem:
                imgui.text_wrapped(self.problem)
            if imgui.button("Save and quit (S)"):
                choice = "save"
            imgui.same_line()
            if imgui.button("Discard and quit (D)"):
                choice = "discard"
            imgui.same_line()
            if imgui.button("Cancel (C)"):
                choice = "cancel"
            choice = choice or self._key(imgui, ASK_KEYS, escape="cancel")
            if choice:
                imgui.close_current_popup()
                imgui.end_popup()
                self.answer(choice)
                return
        else:
            rec = self.offer
            imgui.text_wrapped(f"An earlier session ended with unsaved edits: {rec.summary()}.")
            imgui.text_wrapped(f"Kept in {rec.path}" + (f" ({self.more_offers} older kept too)" if self.more_offers else ""))
            if imgui.button("Restore (R)"):
                choice = "restore"
            imgui.same_line()
            if imgui.button("Discard (D)"):
                choice = "discard"
            imgui.same_line()
            if imgui.button("Later (L)"):
                choice = "later"
            choice = choice or self._key(imgui, OFFER_KEYS)
            if choice:
                imgui.close_current_popup()
                imgui.end_popup()
                self.answer_offer(choice)
                return
        imgui.end_popup()

    @staticmethod
    def _key(imgui, keys: dict, escape: str | None = None) -> str | None:
        for choice, k in keys.items():
            if imgui.is_key_pressed(getattr(imgui.Key, k.lower()), False):
                return choice
        if escape and imgui.is_key_pressed(imgui.Key.escape, False):
            return escape
        return None
