"""``export web``: a folder a browser opens: ``index.html``, the page's script, one ``.glb`` per tile
(what ``export gltf`` writes: terrain, doodads, WMOs, liquids, instanced grass) and ``scene.json``
(the tiles, the start camera, the zone's light for every half hour, the sway constants).

The page is built on three.js, never copied into the repository: a pinned npm version, loaded from
a copy written beside the page (``three=`` the folder of an ``npm install three``; the files are
checked against the pinned hashes) or from a CDN with subresource-integrity hashes of the same files.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import shutil
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from wowgrass.errors import UsageError
from wowgrass.fileio import write_atomic

THREE_VERSION = "0.180.0"
# The files the page loads, by path in the npm package, with their sha384 (SRI) hashes, computed
# from `npm pack three@0.180.0` (tests/test_web.py checks them against a local npm copy).
THREE_FILES = {
    "build/three.module.min.js": "sha384-G204cH8yiGRBsIeOd0ayBXn7MSDuf0X5To614xt+2b1ApqNUxAWn/XqL8Xilauyd",
    "build/three.core.min.js": "sha384-Aa12tAyxIBJJAFu3qP8FVQCMM0U5JQGdmu9Plhyw4kRdmajEzNw8jChNzDqgEu9x",
    "examples/jsm/loaders/GLTFLoader.js": "sha384-s7nILfbc478eUC319/oD77M04rFg5QqywtMJEVMtUrlMIoGoUDSJ0gPPnLlw+bBy",
    "examples/jsm/utils/BufferGeometryUtils.js":
        "sha384-Qy9m6qi71cTFsL476nB1aK+wPxxPgU6H6pn/++8gOgy4/vTtkDuFBfPo22hBhx36",
}
THREE_CDN = f"https://cdn.jsdelivr.net/npm/three@{THREE_VERSION}/"
PAGE_FILES = ("index.html", "wowgrass-web.js")   # package data: wowgrass/export/web/
#: what a tile's export lacks, named as export gltf names it
MISSING = ("missing_wmos", "stand_ins", "missing_grass", "missing_doodads", "missing_textures")
HALF_HOURS = 48   # the light table's steps: one every 30 minutes of the day
DAY_HALF_MINUTES = 2880


def sri(data: bytes) -> str:
    return "sha384-" + base64.b64encode(hashlib.sha384(data).digest()).decode()


def three_package(folder) -> Path:
    """The ``three`` package inside ``folder`` (an ``npm install three`` prefix, its node_modules,
    or the package itself), at the pinned version; UsageError naming what is wrong."""
    folder = Path(folder)
    for cand in (folder, folder / "three", folder / "node_modules" / "three"):
        pj = cand / "package.json"
        if pj.is_file():
            try:
                meta = json.loads(pj.read_text())
            except ValueError:
                continue
            if meta.get("name") == "three":
                if meta.get("version") != THREE_VERSION:
                    raise UsageError(f"--three {folder}: three {meta.get('version')} there; the page is written "
                                     f"for three {THREE_VERSION} (npm install three@{THREE_VERSION})")
                check_three(cand)
                return cand
    raise UsageError(f"--three {folder}: no three package there (run `npm install three@{THREE_VERSION}` "
                     "in a folder and give that folder)")


def check_three(package: Path) -> None:
    """Each file the page loads is there and is the published file (its pinned hash)."""
    for rel, want in THREE_FILES.items():
        try:
            data = (package / rel).read_bytes()
        except OSError as exc:
            raise UsageError(f"--three {package}: {rel} cannot be read ({exc.strerror})") from None
        if sri(data) != want:
            raise UsageError(f"--three {package}: {rel} differs from three {THREE_VERSION} as published "
                             f"(hash {sri(data)}, expected {want})")


def copy_three(package: Path, out: Path) -> int:
    """Copy the page's three.js files (and its licence) to ``out/three``, each checked against its
    pinned hash; returns the bytes written."""
    total = 0
    for rel in THREE_FILES:
        data = (package / rel).read_bytes()
        if sri(data) != THREE_FILES[rel]:   # changed since check_three
            raise UsageError(f"--three {package}: {rel} changed while the page was written")
        write_atomic(out / "three" / rel, data)
        total += len(data)
    lic = package / "LICENSE"
    if lic.is_file():
        write_atomic(out / "three" / "LICENSE", lic.read_bytes())
    return total


def import_map(local: bool) -> dict:
    """The page's import map: ``three`` and ``three/addons/`` from ``./three/`` or the pinned CDN,
    with the integrity of every file it loads."""
    base = "./three/" if local else THREE_CDN
    return {"imports": {"three": base + "build/three.module.min.js", "three/addons/": base + "examples/jsm/"},
            "integrity": {base + rel: h for rel, h in THREE_FILES.items()}}


def page_html(local: bool, title: str) -> str:
    template = resources.files("wowgrass.export").joinpath("web/index.html").read_text()
    imap = import_map(local)
    cross = "" if local else ' crossorigin="anonymous"'
    preload = "\n".join(f'<link rel="modulepreload" href="{url}" integrity="{h}"{cross}>'
                        for url, h in imap["integrity"].items())
    from html import escape

    return (template.replace("{{IMPORTMAP}}", json.dumps(imap, indent=1))
            .replace("{{PRELOAD}}", preload).replace("{{TITLE}}", escape(title))
            .replace("{{CDN}}", "null" if local else json.dumps(THREE_CDN))
            .replace("{{THREE_VERSION}}", THREE_VERSION))


@dataclass
class WebTile:
    col: int
    row: int
    file: str
    bytes: int
    grass_instance_count: int
    doodad_instance_count: int
    wmo_placement_count: int
    liquid_cell_count: int


@dataclass
class WebSummary:
    folder: str = ""
    map: str = ""
    tiles: list = field(default_factory=list)
    tile_count: int = 0
    bytes: int = 0        # the whole folder
    tile_bytes: int = 0   # the tiles' .glb files
    three: str = ""       # "local" or the CDN address
    three_version: str = THREE_VERSION
    light: str = ""       # "tables" or "fixed"
    clock: str = ""
    warnings: list = field(default_factory=list)

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["tiles"] = [t.__dict__ for t in self.tiles]
        return d


def tile_glb(tile, read, map_name: str, texture_size: int, placeholders: bool = True):
    """One tile as ``export gltf`` writes it (instanced grass, its own origin at its centre)."""
    from .scene import export_scene

    return export_scene([tile], read, map_name=map_name, instancing="ext", texture_size=texture_size,
                        origin="centre", placeholders=placeholders)


def light_table(map_light, centre) -> list[dict]:
    """The zone's light at ``centre`` every half hour (what the page's hour slider blends)."""
    from wowgrass.game.light import scene_light

    out = []
    for k in range(HALF_HOURS):
        sl = scene_light(map_light, centre, k * DAY_HALF_MINUTES / HALF_HOURS)
        out.append(light_entry(sl.sun_dir, sl.sun_color, sl.ambient, sl.fog_color, sl.fog, sl.sky))
    return out


def light_entry(sun_dir, sun_color, ambient, fog_color, fog, sky=None) -> dict:
    r = lambda v: [round(float(x), 5) for x in v]  # noqa: E731
    e = {"sun_dir": r(sun_dir), "sun_color": r(sun_color), "ambient": r(ambient), "fog_color": r(fog_color),
         "fog": r(fog)}
    if sky is not None:   # sky_top, sky_middle, sky_band1, sky_band2, sky_smog, fog: the view's sky.glsl bands
        e["sky"] = r(np.asarray(sky, np.float64).reshape(-1))
    return e


def fixed_light() -> dict:
    """The view's own sun (no light tables): its direction, colours and fog."""
    from wowgrass.render.frame import AMBIENT, SKY, SUN_COLOR, SUN_DIR, Frame

    return light_entry(SUN_DIR, SUN_COLOR, AMBIENT, SKY, Frame().fog, (SKY,) * 6)


def grass_constants() -> dict:
    """The view's default look (the grass reference's sway, fade and LOD rings) for the page."""
    from wowgrass.render.constants import GrassSettings

    s = GrassSettings.for_look("default")
    c = s.frame_columns((0.0, 0.0), 0.0)
    return {"fade_start": s.fade_start, "draw_distance": s.draw_distance, "wind_speed": s.wind_speed,
            "wind_amplitude": s.wind_amplitude, "root_fraction": s.root_fraction, "phase": list(s.phase),
            "sway_direction": [c[10], c[11]], "ring_radii": list(s.rings.radii_padded()),
            "ring_keep": list(s.rings.keep_padded()), "ring_band": s.rings.band}


def height_grid(adt) -> dict:
    """The tile's 129x129 vertex heights (north-west first, rows south, columns east) as
    little-endian int16 decimetres in base64: the page's ground under the camera (fog, near plane)."""
    from .layers import vertex_heights

    h = np.clip(np.round(vertex_heights(adt) * 10.0), -32768, 32767).astype("<i2")
    return {"size": int(h.shape[0]), "decimetres": base64.b64encode(h.tobytes()).decode()}


def start_camera(tiles, eye_height: float = 1.7) -> dict:
    """Where the page starts: at eye height over the grass instance nearest the first tile's centre,
    looking 30 degrees left of north and a little down (URL ``#camera=X,Y,Z&target=X,Y,Z`` moves it)."""
    from wowgrass.game.coords import tile_centre
    from wowgrass.grass.bundle import read_bundle, unpack_instances

    t = tiles[0]
    cx, cy = tile_centre(t.adt.col, t.adt.row)
    x, y, z = cx, cy, float(np.median(t.adt.positions[:, 2]))
    if t.bundle is not None:
        try:
            with read_bundle(t.bundle) as b:
                parts = [unpack_instances(m.instances)[0][:, :3] for m in b.models if len(m)]
                pos = np.concatenate(parts) if parts else None
        except (OSError, ValueError):  # a camera is a convenience: without grass, the tile's centre
            pos = None
        if pos is not None and len(pos):
            i = int(np.argmin((pos[:, 0] - cx) ** 2 + (pos[:, 1] - cy) ** 2))
            x, y, z = (float(v) for v in pos[i])
    z += eye_height
    yaw, pitch = math.radians(30.0), math.radians(-8.0)
    target = [x + 10 * math.cos(yaw) * math.cos(pitch), y + 10 * math.sin(yaw) * math.cos(pitch),
              z + 10 * math.sin(pitch)]
    return {"position": [x, y, z], "target": target}


def write_page(out: Path, *, local_three: Path | None, title: str, scene: dict) -> int:
    """index.html, the script and scene.json into ``out`` (and three.js when local); their bytes."""
    total = 0
    if local_three is not None:
        total += copy_three(local_three, out)
    html = page_html(local_three is not None, title).encode()
    write_atomic(out / "index.html", html)
    js = resources.files("wowgrass.export").joinpath("web/wowgrass-web.js").read_bytes()
    write_atomic(out / "wowgrass-web.js", js)
    sj = json.dumps(scene, indent=1).encode()
    write_atomic(out / "scene.json", sj)
    return total + len(html) + len(js) + len(sj)


def check_folder(out: Path) -> bool:
    """Refuse a file or a folder holding something other than an earlier export, before any work;
    returns whether an earlier export is there (it is replaced, whole, once the new one is complete)."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out} is a file; -o takes a folder")
    earlier = out.is_dir() and (out / "scene.json").is_file()
    if out.is_dir() and not earlier and any(out.iterdir()):
        raise UsageError(f"{out} is not empty and holds no earlier web export; give a new or empty folder")
    return earlier


_STAGE = ".wowgrass-web"


def stage_folder(out: Path) -> Path:
    """A hidden folder beside ``out`` that the export is written into; :func:`publish_folder` puts it
    in ``out``'s place once complete, so a failed or interrupted export leaves ``out`` as it was.
    Those a killed export left behind (their process gone) are removed first."""
    import os
    import tempfile

    out.parent.mkdir(parents=True, exist_ok=True)
    for stale in out.parent.glob(f".{out.name}.*{_STAGE}-*"):
        try:
            os.kill(int(stale.name.rsplit(".", 2)[-2]), 0)
        except ProcessLookupError:
            shutil.rmtree(stale, ignore_errors=True)
        except (ValueError, IndexError, OSError):
            pass
    return Path(tempfile.mkdtemp(prefix=f".{out.name}.{os.getpid()}.", suffix=f"{_STAGE}-new", dir=out.parent))


def publish_folder(staged: Path, out: Path) -> None:
    """``staged`` (complete) in place of ``out`` (an earlier export, an empty folder, or nothing)."""
    import os

    if not out.exists():
        os.rename(staged, out)
        return
    old = staged.with_name(staged.name[: -len("new")] + "old")
    try:
        os.rename(out, old)
        os.rename(staged, out)
    except OSError:   # out cannot be renamed (a mount point): its entries, then the new ones
        old.mkdir(exist_ok=True)
        for p in out.iterdir():
            os.rename(p, old / p.name)
        for p in staged.iterdir():
            os.rename(p, out / p.name)
        staged.rmdir()
    shutil.rmtree(old, ignore_errors=True)


# --- tiles, in this process or --jobs worker processes -------------------------------------------------
_WORKER: dict = {}


def _worker_open(spec, map_name, big_alpha, texture_size, placeholders):
    _WORKER.update(data=spec.open(), map_name=map_name, big_alpha=big_alpha,
                   texture_size=texture_size, placeholders=placeholders)


def _worker_tile(job):
    """(col, row, bundle) -> (col, row, glb bytes, summary dict), in a worker that opened the data."""
    from wowgrass.game.tiles import adt_game_path, read_adt

    from .scene import TileInput

    col, row, bundle = job
    w = _WORKER
    name = adt_game_path(w["map_name"], col, row)
    adt = read_adt(w["data"].read(name), name, w["big_alpha"])
    glb, summary = tile_glb(TileInput(adt, Path(bundle) if bundle else None), w["data"].read, w["map_name"],
                            w["texture_size"], w["placeholders"])
    return col, row, glb, summary.to_dict()


def export_tiles(src, out: Path, *, big_alpha, texture_size: int, placeholders: bool,
                 jobs: int = 1, progress=None) -> list[WebTile]:
    """Each tile of ``src`` (an :class:`~wowgrass.export.inputs.ExportSource`) as ``out/tiles/C_R.glb``,
    ``jobs`` processes at once (each reopens ``src.data`` from its spec); ``progress(name)`` after each.
    Returns the tiles and an ExportSummary of what they lack (:data:`MISSING`, warnings)."""
    done: list[WebTile] = []
    from .scene import ExportSummary

    missing = ExportSummary()

    def keep(col, row, glb, s):
        rel = f"tiles/{col}_{row}.glb"
        write_atomic(out / rel, glb)
        for key in MISSING:   # what export gltf of the same tiles names
            setattr(missing, key, sorted(set(getattr(missing, key)) | set(s[key])))
        missing.warnings += [w for w in s["warnings"] if w not in missing.warnings]
        done.append(WebTile(col, row, rel, len(glb), s["grass_instances"], s["doodad_instances"],
                            s["wmo_placements"], s["liquid_cells"]))
        if progress:
            progress(f"{col}_{row}")

    if jobs <= 1 or len(src.tiles) <= 1:
        for t in src.tiles:
            glb, s = tile_glb(t, src.read, src.map_name, texture_size, placeholders)
            keep(t.adt.col, t.adt.row, glb, s.to_dict())
    else:
        import multiprocessing as mp

        from wowgrass.pools import map_in, worker_pool

        work = [(t.adt.col, t.adt.row, str(t.bundle) if t.bundle else None) for t in src.tiles]
        with worker_pool(min(jobs, len(work)), _worker_open,
                         (src.data.spec(), src.map_name, big_alpha, texture_size, placeholders),
                         mp_context=mp.get_context("spawn")) as pool:
            for res in map_in(pool, _worker_tile, work):
                keep(*res)
    return sorted(done, key=lambda t: (t.row, t.col)), missing
