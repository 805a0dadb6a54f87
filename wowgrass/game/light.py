"""The zone's light: Light, LightParams, LightIntBand, LightFloatBand (and LightSkybox) as the
clients use them, for a map, a position and a time of day. docs/light.md has the rules and their
sources; in short:

* **Lights** (Light.dbc) belong to a map (``ContinentID``). Positions and falloff radii are stored
  in 1/36 yard in the client's file axes; the client converts them once at load time to world
  coordinates (X north, Y west, Z up): ``X = 17066.666 - c[2]/36``, ``Y = 17066.666 - c[0]/36``,
  ``Z = c[1]/36`` (SatyPardus/wotlk-rebuild src/db/Db.cpp, ``TransformMapCoord``). A light at
  (0, 0, 0) is the map's **global** light; a map without one takes map 0's.
* **Weights**: local lights sorted by falloff end (smallest first), the global last; a light's
  ``r = clamp((d - start) / (end - start), 0, 1)`` from the camera's distance ``d``; its weight is
  ``(1 - r)`` times the ``r`` of every smaller light, the global gets the product of all ``r``
  (purpleKarrot/wowmapview mapview/sky.cpp ``findSkyWeights``, the same in wowdev/noggit3). The
  weights sum to 1 and are continuous in the position.
* **Bands**: parameter set ``p`` (the light's ``LightParamsID[0]``, clear weather) has colour
  bands ``p*18 - 17 + i`` (i < 18) and float bands ``p*6 - 5 + i`` (i < 6); each band is ``Num``
  (time, value) pairs, time in half-minutes (0..2880), interpolated linearly and across midnight.
* **Colours** are ``0x00RRGGBB`` (red in bits 16-23): 0..255 here.
* **Rounding**: ``exact=False`` (the default) keeps colours in whole bytes after each blend, as
  the client's byte colour vectors do (an inference, see docs/light.md); ``exact=True`` keeps floats.

Per frame (:meth:`MapLight.evaluate`): a handful of numpy operations into preallocated buffers;
the per-light band values are recomputed only when the time changes.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from wowgrass.errors import FormatError, WowgrassError
from wowgrass.formats.dbc import detect_schema, DbcFile

COLOR_BANDS = ("diffuse", "ambient", "sky_top", "sky_middle", "sky_band1", "sky_band2", "sky_smog", "fog",
               "shadow_opacity", "sun", "cloud_sun", "cloud_emissive", "cloud_layer1_ambient",
               "cloud_layer2_ambient", "ocean_shallow", "ocean_deep", "river_shallow", "river_deep")
FLOAT_BANDS = ("fog_end", "fog_start_scaler", "celestial_glow", "cloud_density", "float_band_4", "float_band_5")
TABLES = ("Light", "LightParams", "LightIntBand", "LightFloatBand", "LightSkybox")
REQUIRED = TABLES[:4]
DAY = 2880                       # half-minutes in a day
UNITS = 36.0                     # table units per yard (positions, radii, fog distances)
CORNER = 17066.666               # 32 tiles of 533.333: the map's corner offset the client adds
BANDS_PER_SET, FLOATS_PER_SET = 18, 6
MAX_KEYS = 16


def table_path(table: str) -> str:
    return f"DBFilesClient\\{table}.dbc"


class LightUnavailable(WowgrassError):
    """The light tables are missing, short or of another build (callers warn and keep the fixed sun)."""


def parse_clock(text: str) -> int:
    """``"HH:MM"`` (or ``"HH:MM:SS"``) -> half-minutes since midnight; UsageError names the range."""
    from wowgrass.errors import UsageError

    parts = str(text).strip().split(":")
    try:
        if len(parts) not in (2, 3):
            raise ValueError
        h, m = int(parts[0]), int(parts[1])
        s = int(parts[2]) if len(parts) == 3 else 0
    except ValueError:
        raise UsageError(f"--clock {text!r}: expected HH:MM, 00:00 to 23:59") from None
    if not (0 <= h <= 23 and 0 <= m <= 59 and 0 <= s <= 59):
        raise UsageError(f"--clock {text!r} is out of range: the accepted range is 00:00 to 23:59")
    return h * 120 + m * 2 + s // 30


def clock_text(half_minutes: float) -> str:
    hm = int(half_minutes) % DAY
    return f"{hm // 120:02d}:{(hm % 120) // 2:02d}"


# ----------------------------------------------------------------------------------------- tables
@dataclass
class LightTables:
    """The four (five) tables, typed; ``build`` as detected from Light.dbc's layout."""

    build: str
    lights: np.ndarray                      # Light records
    params: np.ndarray | None               # LightParams records (optional: glow, water alphas)
    int_bands: np.ndarray                   # LightIntBand records
    float_bands: np.ndarray                 # LightFloatBand records
    skyboxes: dict = field(default_factory=dict)   # LightSkybox ID -> model path
    warnings: list = field(default_factory=list)

    @classmethod
    def from_bytes(cls, tables: dict, *, build: str | None = None) -> "LightTables":
        """``tables``: name -> bytes (``TABLES``; LightParams and LightSkybox may be absent).
        LightUnavailable when a required one is missing or its layout fits no build."""
        missing = [t for t in REQUIRED if t != "LightParams" and tables.get(t) is None]
        if missing:
            raise LightUnavailable(f"no {', '.join(t + '.dbc' for t in missing)}")
        typed, warnings = {}, []
        for t in TABLES:
            raw = tables.get(t)
            if raw is None:
                continue
            try:
                dbc = DbcFile.from_bytes(raw, f"{t}.dbc")
                det = detect_schema(dbc, t, None, build if t != "Light" else None)
            except FormatError as exc:
                if t in ("LightParams", "LightSkybox"):
                    warnings.append(f"{t}.dbc ignored: {exc}")
                    continue
                raise LightUnavailable(str(exc)) from None
            if det.schema is None:
                if t in ("LightParams", "LightSkybox"):
                    warnings.append(f"{t}.dbc ignored: {det.reason}")
                    continue
                raise LightUnavailable(f"{t}.dbc: {det.reason}")
            if t == "Light":
                build = build or det.build
                if build not in det.candidates:
                    raise LightUnavailable(f"Light.dbc has the {det.build} layout ({det.reason}), "
                                           f"the data is {build}")
            typed[t] = dbc.with_schema(det.schema).records
        skyboxes = {}
        if "LightSkybox" in typed:
            sb = DbcFile.from_bytes(tables["LightSkybox"], "LightSkybox.dbc")
            for rec in typed["LightSkybox"]:
                try:
                    skyboxes[int(rec["ID"])] = sb.string(int(rec["Name"]))
                except FormatError:
                    pass
        return cls(build, typed["Light"], typed.get("LightParams"), typed["LightIntBand"],
                   typed["LightFloatBand"], skyboxes, warnings)

    @classmethod
    def from_data(cls, data, *, build: str | None = None) -> "LightTables":
        """From a GameData (DBFilesClient paths) or a folder of loose .dbc files; ``build`` (else
        the GameData's, when it knows it) must be one the tables' layout fits."""
        if data is None:
            raise LightUnavailable("no data source for the light tables")
        raw = {}
        for t in TABLES:
            raw[t] = _read_table(data, t)
        if build is None and not isinstance(data, (str, Path)):
            build = getattr(data, "build", None)
        return cls.from_bytes(raw, build=build)

    def maps(self) -> np.ndarray:
        return np.unique(self.lights["ContinentID"])

    def map_light(self, map_id: int, *, exact: bool = False) -> "MapLight":
        return MapLight(self, int(map_id), exact=exact)


def _read_table(data, table: str) -> bytes | None:
    """A table's bytes from a GameData or a folder (as ``--dbc``: the folder or its DBFilesClient)."""
    if isinstance(data, (str, Path)):
        folder = Path(data)
        for base in (folder, folder / "DBFilesClient"):
            if base.is_dir():
                for p in base.iterdir():
                    if p.name.lower() == f"{table.lower()}.dbc":
                        return p.read_bytes()
        return None
    path = table_path(table)
    if data.exists(path):
        return data.read(path)
    root = getattr(data, "root", None)
    if root is not None:  # a loose folder of bare tables
        return _read_table(Path(root), table)
    return None


def load_light_tables(data=None, folder=None, *, warn=None, build: str | None = None) -> LightTables | None:
    """The tables from ``folder`` (loose .dbc) or ``data``; None (after ``warn(message)``) when they
    are missing, short or of another build: the caller keeps the fixed sun."""
    try:
        tables = LightTables.from_data(folder if folder is not None else data, build=build)
    except (LightUnavailable, FormatError, OSError) as exc:
        if warn is not None:
            warn(f"light tables unusable ({exc}); keeping the fixed sun")
        return None
    if warn is not None:
        for w in tables.warnings:
            warn(w)
    return tables


# ------------------------------------------------------------------------------------ evaluation
def _band_keys(records: np.ndarray, first_ids: np.ndarray, count: int, channels: int):
    """Per (light, band): extended key times (n, count, 18) and values (n, count, 18, channels),
    with the last key repeated a day earlier and the first a day later (interpolation across
    midnight); bands with no keys or no row have ``present`` False (their value is 0)."""
    n = len(first_ids)
    ids = records["ID"].astype(np.int64)
    order = np.argsort(ids, kind="stable")
    sids = ids[order]
    want = first_ids[:, None] + np.arange(count)[None, :]
    pos = np.clip(np.searchsorted(sids, want), 0, max(len(sids) - 1, 0))
    found = (sids[pos] == want) if len(sids) else np.zeros(want.shape, bool)
    rows = records[order[pos]] if len(sids) else None
    num = np.where(found, np.clip(rows["Num"], 0, MAX_KEYS), 0) if rows is not None else np.zeros(want.shape, int)
    times = np.full((n, count, MAX_KEYS + 2), np.inf)
    vals = np.zeros((n, count, MAX_KEYS + 2, channels))
    if rows is not None:
        t = rows["Time"].astype(np.float64)
        data = rows["Data"]
        if channels == 3:
            v = data.astype(np.int64) & 0xFFFFFF
            v = np.stack([(v >> 16) & 255, (v >> 8) & 255, v & 255], -1).astype(np.float64)
        else:
            v = data.astype(np.float64)[..., None]
        k = np.arange(MAX_KEYS)
        live = k[None, None, :] < num[..., None]
        times[..., 1:MAX_KEYS + 1] = np.where(live, t, np.inf)
        vals[..., 1:MAX_KEYS + 1, :] = np.where(live[..., None], v, 0.0)
        last = np.maximum(num - 1, 0)
        i0, i1 = np.indices(num.shape)
        first_t, last_t = t[..., 0], t[i0, i1, last]
        times[..., 0] = last_t - DAY
        vals[..., 0, :] = v[i0, i1, last]
        # the first key again a day later, right after the last one
        times[i0, i1, num + 1] = np.where(num > 0, first_t + DAY, np.inf)
        vals[i0, i1, num + 1] = v[:, :, 0]
        times[num == 0] = np.inf
    return times, vals, num > 0


def _interpolate(times, vals, present, t: float) -> np.ndarray:
    """Every band's value at time ``t`` (half-minutes, 0 <= t < 2880): (n, count, channels)."""
    idx = np.clip((times <= t).sum(-1) - 1, 0, MAX_KEYS)
    a = np.take_along_axis(times, idx[..., None], -1)[..., 0]
    b = np.take_along_axis(times, (idx + 1)[..., None], -1)[..., 0]
    va = np.take_along_axis(vals, idx[..., None, None], -2)[..., 0, :]
    vb = np.take_along_axis(vals, (idx + 1)[..., None, None], -2)[..., 0, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        span = b - a
        f = np.where(np.isfinite(span) & (span > 0), (t - a) / span, 0.0)
    out = va + (vb - va) * f[..., None]
    out[~present] = 0.0
    return out


def client_sun_direction(half_minutes: float) -> np.ndarray:
    """Towards the client's directional light at this hour (world X north, Y west, Z up).

    The client's exterior light direction is spherical (phi, theta) from day tables: phi 2.2165682
    at midnight and noon, 1.9198623 at 06:00 and 18:00 (linear between, across midnight), theta
    3.926991 (Deamon87/WebWowViewerCpp wowViewerLib/src/engine/algorithms/mathHelper.cpp,
    ``calcExteriorColorDir``); the vector (sin phi cos theta, sin phi sin theta, cos phi) is the
    direction the light travels, so towards it is its negation: from the north-west, 37 degrees up
    at noon and midnight, 20 degrees at six."""
    f = (float(half_minutes) % DAY) / DAY
    keys = (0.0, 0.25, 0.5, 0.75, 1.0)
    phis = (2.2165682, 1.9198623, 2.2165682, 1.9198623, 2.2165682)
    phi = float(np.interp(f, keys, phis))
    theta = 3.926991
    d = np.array([math.sin(phi) * math.cos(theta), math.sin(phi) * math.sin(theta), math.cos(phi)])
    return -d / np.linalg.norm(d)


def light_world_positions(coords: np.ndarray) -> np.ndarray:
    """Light.dbc GameCoords (n, 3) -> world (n, 3) yards, as the client converts them."""
    c = np.asarray(coords, np.float64) / UNITS
    return np.stack([CORNER - c[:, 2], CORNER - c[:, 0], c[:, 1]], -1)


class MapLight:
    """A map's lights, precomputed for per-frame lookups: :meth:`evaluate` writes the blended
    colours (18 x RGB, 0..255) and floats (6) into :attr:`colors` / :attr:`floats`."""

    def __init__(self, tables: LightTables, map_id: int, *, exact: bool = False):
        self.tables, self.map_id, self.exact = tables, map_id, exact
        self.notes: list[str] = []
        L = tables.lights
        on_map = L["ContinentID"] == map_id
        is_global = (L["GameCoords"] == 0).all(1)
        glob = np.flatnonzero(on_map & is_global)
        if not len(glob):
            glob = np.flatnonzero((L["ContinentID"] == 0) & is_global)[:1]
            if len(glob):
                self.notes.append(f"map {map_id} has no global light: map 0's (Light {int(L['ID'][glob[0]])})")
        local = np.flatnonzero(on_map & ~is_global)
        if not len(glob) and not len(local):
            raise LightUnavailable(f"Light.dbc has no light for map {map_id} (nor a global light of map 0)")
        rec = L[local]
        world = light_world_positions(rec["GameCoords"])
        r1 = rec["GameFalloffStart"].astype(np.float64) / UNITS
        r2 = rec["GameFalloffEnd"].astype(np.float64) / UNITS
        order = np.argsort(r2, kind="stable")             # smallest first; the global last
        self.rows = np.concatenate([local[order], glob[:1]])
        self.global_index = len(local) if len(glob) else -1
        n = len(self.rows)
        self.ids = L["ID"][self.rows].astype(np.int64)
        self.params_ids = L["LightParamsID"][self.rows][:, 0].astype(np.int64)
        self.position = np.zeros((n, 3))
        self.position[:len(local)] = world[order]
        self.falloff = np.zeros((n, 2))
        self.falloff[:len(local), 0], self.falloff[:len(local), 1] = r1[order], r2[order]
        self.n_local = len(local)
        # per-frame constants of the local lights: squared distance as |p|^2 - 2 p.c + |c|^2 (one
        # matrix-vector product), the lights the camera is inside the falloff end of in ascending order
        p = self.position[:self.n_local]
        self._r1 = self.falloff[:self.n_local, 0].copy()
        self._r2sq = self.falloff[:self.n_local, 1] ** 2
        # one row per light: (-2 p, |p|^2 - end^2) . (c, 1) = |c - p|^2 - |c|^2 - end^2
        self._a = np.ascontiguousarray(np.concatenate([-2.0 * p, ((p * p).sum(1) - self._r2sq)[:, None]], 1))
        self._c4 = np.ones(4)
        width = self.falloff[:self.n_local, 1] - self._r1
        self._inv = np.where(width > 0, 1.0 / np.where(width > 0, width, 1.0), 1e30)
        # band keys
        pid = self.params_ids
        self._ctimes, self._cvals, self._cpresent = _band_keys(tables.int_bands, pid * BANDS_PER_SET - 17,
                                                               BANDS_PER_SET, 3)
        self._ftimes, self._fvals, self._fpresent = _band_keys(tables.float_bands, pid * FLOATS_PER_SET - 5,
                                                               FLOATS_PER_SET, 1)
        missing = int((~self._cpresent).sum() + (~self._fpresent).sum())
        if missing:
            self.notes.append(f"{missing} band(s) without keys (or rows) read as 0")
        # preallocated buffers
        self._values = np.zeros((n, BANDS_PER_SET * 3 + FLOATS_PER_SET))
        self._time = None
        self._d2 = np.zeros(self.n_local)
        self._inside = np.zeros(self.n_local, bool)
        self._order = np.arange(self.n_local)
        self._active = np.zeros(self.n_local, np.int64)
        self._tmp = np.zeros(BANDS_PER_SET * 3 + FLOATS_PER_SET)
        self.weights = np.zeros(n)
        self.blend = np.zeros(BANDS_PER_SET * 3 + FLOATS_PER_SET)
        self.colors = self.blend[:BANDS_PER_SET * 3].reshape(BANDS_PER_SET, 3)
        self.floats = self.blend[BANDS_PER_SET * 3:]
        self.active = self._active[:0]  # the local lights with a weight, smallest first

    def __len__(self) -> int:
        return len(self.rows)

    def set_time(self, half_minutes: float) -> None:
        """Every light's band values at this time (only when the time changes)."""
        t = float(half_minutes) % DAY
        if t == self._time:
            return
        c = _interpolate(self._ctimes, self._cvals, self._cpresent, t)
        if not self.exact:
            np.rint(c, out=c)
        f = _interpolate(self._ftimes, self._fvals, self._fpresent, t)[..., 0]
        self._values[:, :BANDS_PER_SET * 3] = c.reshape(len(self), -1)
        self._values[:, BANDS_PER_SET * 3:] = f
        self._time = t

    def evaluate(self, position, half_minutes: float) -> np.ndarray:
        """The light at ``position`` (world x, y, z) and time: fills :attr:`weights`,
        :attr:`colors` and :attr:`floats` (views of one buffer, returned). No array is allocated
        once the time is set: the few lights the camera is within are blended one by one."""
        self.set_time(half_minutes)
        px, py, pz = position[0], position[1], position[2]
        w = self.weights
        w.fill(0.0)
        k = 0
        cc = px * px + py * py + pz * pz
        if self.n_local:
            c4 = self._c4
            c4[0], c4[1], c4[2] = px, py, pz
            np.dot(self._a, c4, out=self._d2)
            np.less(self._d2, -cc, out=self._inside)
            k = int(np.count_nonzero(self._inside))
        blend, values = self.blend, self._values
        if k == 0:
            self.active = self._active[:0]
            if self.global_index >= 0:
                w[self.global_index] = 1.0
                blend[:] = values[self.global_index]
            else:
                blend.fill(0.0)
        else:
            active = np.compress(self._inside, self._order, out=self._active[:k])
            self.active = active
            # weight_i = (1 - r_i) * prod of the r of the smaller lights; the global gets the rest
            rest = 1.0
            blend.fill(0.0)
            for i in active.tolist():
                d2 = float(self._d2[i]) + cc + float(self._r2sq[i])
                r = (math.sqrt(d2 if d2 > 0.0 else 0.0) - float(self._r1[i])) * float(self._inv[i])
                r = 0.0 if r < 0.0 else (1.0 if r > 1.0 else r)
                wi = (1.0 - r) * rest
                rest *= r
                w[i] = wi
                if wi:
                    np.multiply(values[i], wi, out=self._tmp)
                    np.add(blend, self._tmp, out=blend)
                if rest == 0.0:
                    break
            if self.global_index >= 0 and rest > 0.0:
                w[self.global_index] = rest
                np.multiply(values[self.global_index], rest, out=self._tmp)
                np.add(blend, self._tmp, out=blend)
        if not self.exact:
            np.rint(self.colors, out=self.colors)
        return self.blend

    # ---- results by name
    def result(self, position, half_minutes: float) -> dict:
        """The JSON-ready light: ``{"colors": {name: [r, g, b]}, "floats": {name: v}, "lights": [...]}``."""
        here = np.asarray(position, np.float64)
        self.evaluate(here, half_minutes)
        lights = []
        for i in np.flatnonzero(self.weights > 0):
            d = None if i == self.global_index else float(np.linalg.norm(self.position[i] - here))
            lights.append({
                "id": int(self.ids[i]), "params_id": int(self.params_ids[i]),
                "global": bool(i == self.global_index), "weight": float(self.weights[i]),
                "position": None if i == self.global_index else [float(v) for v in self.position[i]],
                "falloff": None if i == self.global_index else [float(v) for v in self.falloff[i]],
                "distance": d,
            })
        colors = {name: [float(v) for v in self.colors[i]] for i, name in enumerate(COLOR_BANDS)}
        floats = {name: float(self.floats[i]) for i, name in enumerate(FLOAT_BANDS)}
        floats["fog_end"] = floats["fog_end"] / UNITS
        return {"colors": colors, "floats": floats, "lights": lights}


# ------------------------------------------------------------------------------- what views use
@dataclass
class SceneLight:
    """What a renderer or an export takes from the tables for one place and hour (0..1 colours)."""

    sun_dir: tuple
    sun_color: tuple
    ambient: tuple
    fog_color: tuple
    fog: tuple              # start, end (yards)
    sky: tuple              # sky_top, sky_middle, sky_band1, sky_band2, sky_smog, fog: 6 RGB
    water: tuple            # river_shallow, river_deep, ocean_shallow, ocean_deep: 4 RGB


def scene_light(map_light: MapLight, position, half_minutes: float) -> SceneLight:
    """The light at ``position`` and hour as a renderer takes it (colours 0..1; fog in yards:
    start = end x the start scaler, clamped as the clients do, end at least 10)."""
    map_light.evaluate(np.asarray(position, np.float64), half_minutes)
    v = map_light.blend.tolist()
    k = 1.0 / 255.0

    def rgb(i):
        return (v[3 * i] * k, v[3 * i + 1] * k, v[3 * i + 2] * k)

    f0 = 3 * BANDS_PER_SET
    end = max(v[f0] / UNITS, 10.0)
    scaler = min(max(v[f0 + 1], -1.0), 1.0)
    return SceneLight(
        sun_dir=_sun_tuple(int(half_minutes) % DAY), sun_color=rgb(0), ambient=rgb(1), fog_color=rgb(7),
        fog=(max(end * scaler, 0.0), end), sky=(rgb(2), rgb(3), rgb(4), rgb(5), rgb(6), rgb(7)),
        water=(rgb(16), rgb(17), rgb(14), rgb(15)))


@functools.lru_cache(maxsize=DAY)
def _sun_tuple(half_minutes: int) -> tuple:
    return tuple(float(x) for x in client_sun_direction(half_minutes))


def resolve_map(source, name) -> tuple[int, str]:
    """``--map`` (a Map.dbc Directory, any case, or a numeric ID) -> (ID, Directory) through the
    source's Map.dbc (a GameData or a folder of loose tables); UsageError when it names no map."""
    from wowgrass.errors import UsageError
    from wowgrass.game.maps import MAP_TABLE, read_map_table

    text = str(name).strip()
    raw = _read_table(source, "Map")
    rows = read_map_table(raw, MAP_TABLE) if raw is not None else []
    if text.lstrip("-").isdigit():
        mid = int(text)
        return mid, next((d for i, d in rows if i == mid), text)
    for mid, directory in rows:
        if directory.lower() == text.lower():
            return mid, directory
    if not rows:
        raise UsageError(f"--map {text}: no Map.dbc to look the name up in (give the map's numeric ID)")
    near = [d for _, d in rows if text.lower() in d.lower()][:5]
    raise UsageError(f"--map {text}: not in Map.dbc" + (f" (did you mean {', '.join(near)}?)" if near else ""))
