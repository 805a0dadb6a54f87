"""Draws docs/workbench-rooms.png: the workbench's rooms and the way an edit travels (docs/architecture.md).

    python docs/workbench_rooms.py [OUT.png]
"""

from __future__ import annotations

import sys
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

W, H = 1500, 980
INK, MUTED, EDIT, DISK, WORK = (30, 34, 40), (110, 116, 126), (200, 60, 40), (40, 110, 190), (40, 150, 90)


def font(size, bold=False):
    for name in (f"DejaVuSans{'-Bold' if bold else ''}.ttf", "DejaVuSans.ttf"):
        for root in ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/dejavu"):
            p = Path(root) / name
            if p.exists():
                return ImageFont.truetype(str(p), size)
    return ImageFont.load_default()


F, FB, FS, FT = font(15), font(16, True), font(13), font(22, True)

# room: (x, y, w, h, title, lines, fill)
ROOMS = {
    "window": (40, 70, 330, 150, "controller.py  (the window's ui)",
               ["input: panels first, then bindings", "panels.py (Dear ImGui): reads state", "frame thread: before_frame",
                "the workbench's thread: jobs"], (236, 240, 247)),
    "tools": (430, 70, 300, 120, "tools.py  TOOLS", ["one class a tool: key, label, help,",
                                                      "brush test, apply(session, at, state)"], (250, 244, 230)),
    "session": (430, 300, 300, 200, "session.py  EditSession", ["the bytes (one source of truth)",
                                                                 "tools' primitives -> patch_fields",
                                                                 "history.py: undo / redo",
                                                                 "emits Change(chunks, tables, source)",
                                                                 "  at once (under its lock) / after"],
                (252, 236, 232)),
    "placing": (430, 580, 300, 90, "placing.py  PlacementCache", ["subscribes at once: drops the", "chunks a Change names"],
                (252, 236, 232)),
    "disk": (820, 70, 300, 150, "disk.py  SessionFiles", ["save (all or none), build_patch,", "conflicts, reload, watch",
                                                          "the session never imports it"], (232, 240, 252)),
    "files": (1200, 70, 260, 150, "files on disk", ["loose tiles and tables,", "patch MPQs; watch.py:",
                                                    "another editor's saves"], (244, 244, 244)),
    "bridge": (820, 300, 300, 200, "bridge.py  SceneBridge", ["the one module importing render:",
                                                              "grass hand-over, cell marks,",
                                                              "uniforms, reload_tile, the pick",
                                                              "height_atlas.py: the pick's atlas"], (232, 246, 236)),
    "scene": (1200, 300, 260, 200, "render/  Scene", ["replace_grass", "(the upload budget)", "terrain CellOverlays",
                                                     "reload_tile, on_resident"], (244, 244, 244)),
    "workers": (40, 580, 330, 180, "workers.py  TileWorkers", ["spawned processes: a tile's", "overlay facts, the audit",
                                                               "tile bytes in, image out through", "shared memory"],
                (232, 246, 236)),
    "edit": (1200, 580, 260, 100, "edit/  (below)", ["adt_edit.patch_fields,", "write_edited, audit, patch"],
             (244, 244, 244)),
}


def box(d, key):
    x, y, w, h, title, lines, fill = ROOMS[key]
    d.rounded_rectangle((x, y, x + w, y + h), 10, fill=fill, outline=INK, width=2)
    d.text((x + 12, y + 10), title, font=FB, fill=INK)
    for i, line in enumerate(lines):
        d.text((x + 12, y + 38 + i * 21), line, font=F, fill=INK)


def anchor(key, side, f=0.5):
    x, y, w, h = ROOMS[key][:4]
    return {"l": (x, y + h * f), "r": (x + w, y + h * f), "t": (x + w * f, y), "b": (x + w * f, y + h)}[side]


def arrow(d, a, b, colour, label=None, at=0.5, dy=-18, dx=6, width=3):
    d.line((a, b), fill=colour, width=width)
    import math

    ang = math.atan2(b[1] - a[1], b[0] - a[0])
    for s in (-1, 1):
        d.line((b, (b[0] - 14 * math.cos(ang + s * 0.4), b[1] - 14 * math.sin(ang + s * 0.4))), fill=colour, width=width)
    if label:
        mx, my = a[0] + (b[0] - a[0]) * at, a[1] + (b[1] - a[1]) * at
        d.text((mx + dx, my + dy), label, font=FS, fill=colour)


def step(d, n, xy, colour):
    x, y = xy
    d.ellipse((x - 13, y - 13, x + 13, y + 13), fill=colour)
    d.text((x - 5 if n < 10 else x - 9, y - 9), str(n), font=FB, fill=(255, 255, 255))


def draw(out: Path):
    img = Image.new("RGB", (W, H), (255, 255, 255))
    d = ImageDraw.Draw(img)
    d.text((40, 8), "The workbench's rooms, and the way an edit travels", font=FT, fill=INK)
    for k in ROOMS:
        box(d, k)
    # an edit (red): click -> tool -> session -> Change -> subscribers -> scene
    arrow(d, anchor("window", "r", 0.3), anchor("tools", "l", 0.3), EDIT)
    step(d, 1, (400, 95), EDIT)
    arrow(d, anchor("tools", "b", 0.4), anchor("session", "t", 0.4), EDIT)
    step(d, 2, (578, 278), EDIT)
    arrow(d, anchor("session", "b", 0.85), anchor("edit", "l", 0.5), EDIT, "patch_fields", at=0.62, dy=-2, dx=-10)
    step(d, 3, (760, 519), EDIT)
    arrow(d, anchor("session", "b", 0.35), anchor("placing", "t", 0.35), EDIT, "Change (at once)", at=0.3, dy=0, dx=8)
    step(d, 4, (505, 545), EDIT)
    arrow(d, anchor("session", "l", 0.3), anchor("window", "b", 0.85), EDIT, "Change (after the lock)", at=0.0,
          dy=-30, dx=-215)
    step(d, 5, (400, 330), EDIT)
    arrow(d, anchor("window", "r", 0.85), anchor("bridge", "l", 0.1), EDIT, "apply_change", at=0.62, dy=-26)
    step(d, 6, (790, 290), EDIT)
    arrow(d, anchor("bridge", "r", 0.2), anchor("scene", "l", 0.2), EDIT, "grass", at=0.1, dy=-22)
    step(d, 7, (1160, 370), EDIT)
    # overlays (green)
    arrow(d, anchor("window", "b", 0.5), anchor("workers", "t", 0.5), WORK, "overlays stale: jobs", at=0.5, dy=0, dx=8)
    step(d, 8, (205, 470), WORK)
    x9 = ROOMS["bridge"][0] + ROOMS["bridge"][2] * 0.5
    d.line((anchor("workers", "b", 0.5), (205, 800), (x9, 800)), fill=WORK, width=3)
    arrow(d, (x9, 800), anchor("bridge", "b", 0.5), WORK, "image (shared memory), mapped on the frame's thread",
          at=0.0, dy=4, dx=-440)
    step(d, 9, (x9, 740), WORK)
    # the disk side (blue)
    arrow(d, anchor("disk", "b", 0.1), anchor("session", "r", 0.1), DISK)
    d.text((860, 232), "files_since_saved, mark_saved, take_reloaded", font=FS, fill=DISK)
    arrow(d, anchor("disk", "r", 0.3), anchor("files", "l", 0.3), DISK, "save", at=0.15, dy=-20)
    arrow(d, anchor("files", "l", 0.75), anchor("disk", "r", 0.75), DISK, "reload", at=0.9, dy=4)
    d.line(((340, 70), (340, 56), (850, 56)), fill=DISK, width=2)
    arrow(d, (850, 56), (850, 70), DISK, width=2)
    d.text((560, 37), "Ctrl+S, Save, Build patch", font=FS, fill=DISK)
    # legend
    y = 840
    d.text((40, y), "An edit (red): 1 a click or a dab reaches the current tool through the one input path; 2 the tool "
                    "calls the session; 3 the session writes", font=F, fill=INK)
    d.text((40, y + 24), "the new field values over its copy of the bytes; 4 the placement cache drops the changed "
                         "chunks under the session's lock; 5 the controller hears the", font=F, fill=INK)
    d.text((40, y + 48), "Change (on the frame's thread for a dab); 6 7 the bridge places those chunks again and hands "
                         "the tile's grass to the scene: drawn in the next frame.", font=F, fill=INK)
    d.text((40, y + 72), "Green: 8 9 the tile's overlay is computed in a worker process and mapped on the frame's thread "
                         "(a result for bytes changed since is dropped).", font=F, fill=INK)
    d.text((40, y + 96), "Blue: the disk side reads and sets the session through its public names; a file another "
                         "program saved comes back through reload as a Change.", font=F, fill=INK)
    img.save(out)
    return out


if __name__ == "__main__":
    print(draw(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("workbench-rooms.png")))
