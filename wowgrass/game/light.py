"""The zone's light: Light, LightParams, LightIntBand, LightFloatBand (and LightSkybox) as the
clients use them, for a map, a position and a time of day. docs/light.md has the rules and their
sources; in short:

* **Lights** (Light.dbc) belong to a map (``ContinentID``). Positions and falloff radii are stored
  in 1/36 yard in the client's file axes; the client converts them once at load time to world
  coordinates (X north, Y west, Z up): ``X = 17066.666 - c[2]/36``, ``Y = 17066.666 - c[0]/36``,
  ``Z = c[1]/36`` (SatyPardus/wotlk-rebuild src/db/Db.cpp, ``TransformMapCoord``). A light at
  (0, 0, 0) is the map's **global** light (the last such row); a map without one takes Light 1.
* **Blending** as the 3.3.5 client (zeruth/FrozenClient src/world/DayNightLight.cpp, a decode:
  ``DNGatherLights``): the global light's record for the hour first, then each local light in
  reach (``d^2 < end^2``; 1.12: ``d <= end``) popped from a max-heap on squared distance, farthest
  first, blended as ``acc + (light - acc) * w`` with ``w = 1`` inside the falloff start, else
  ``1 - (d - start) / (end - start)``: the nearest lands last.
* **Bands**: parameter set ``p`` (the light's ``LightParamsID[slot]``: 0 clear, 1 under water, 2
  storm, 3 storm under water) has colour bands ``p*18 - 17 + i`` (i < 18) and float bands
  ``p*6 - 5 + i`` (i < 6); each band is ``Num`` (time, value) pairs, time in half-minutes
  (0..2880), found and interpolated as the client does, across midnight. Fog end (yards) is at
  least 10 and the start scaler in [-1, 1], per light before blending.
* **Colours** are ``0x00RRGGBB`` (red in bits 16-23): 0..255 here.
* **Rounding**: ``exact=False`` (the default) is the client's byte arithmetic (a band's channel
  rounded to nearest-even for the hour, every blend ``round_even(v - 0.5)`` in float32);
  ``exact=True`` keeps floats, for comparison.

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
DAY = 2880                       # half-minutes in a day
UNITS = 36.0                     # table units per yard (positions, radii, fog distances)
CORNER = 17066.666               # 32 tiles of 533.333: the map's corner offset the client adds
BANDS_PER_SET, FLOATS_PER_SET = 18, 6
#: the parameter sets magma and slime take alone under their surface where no LiquidType.LightID
#: says (1.12 [B]: rows 7 and 6; the stock 3.3.5 LiquidType rows name the same); keys: liquid kinds
FIXED_LIQUID_PARAMS = {2: 7, 3: 6}
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
    liquid_lights: dict | None = None       # LiquidType ID -> its LightID (3.3.5's LiquidType.dbc)

    @classmethod
    def from_bytes(cls, tables: dict, *, build: str | None = None) -> "LightTables":
        """``tables``: name -> bytes (``TABLES``; LightParams and LightSkybox may be absent).
        LightUnavailable when a required one is missing or its layout fits no build."""
        missing = [t for t in ("Light", "LightIntBand", "LightFloatBand") if tables.get(t) is None]
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
            bad = []
            for rec in typed["LightSkybox"]:
                try:
                    skyboxes[int(rec["ID"])] = sb.string(int(rec["Name"]))
                except FormatError:
                    bad.append(int(rec["ID"]))
            if bad:
                warnings.append(f"LightSkybox.dbc: {len(bad)} row(s) name no string (ID {bad[0]}...): "
                                "their sky models are left out")
        return cls(build, typed["Light"], typed.get("LightParams"), typed["LightIntBand"],
                   typed["LightFloatBand"], skyboxes, warnings,
                   _liquid_lights(tables.get("LiquidType"), build, warnings))

    @classmethod
    def from_data(cls, data, *, build: str | None = None) -> "LightTables":
        """From a GameData (DBFilesClient paths) or a folder of loose .dbc files; ``build`` (else
        the GameData's, when it knows it) must be one the tables' layout fits."""
        if data is None:
            raise LightUnavailable("no data source for the light tables")
        raw = {}
        for t in (*TABLES, "LiquidType"):
            raw[t] = _read_table(data, t)
        if build is None and not isinstance(data, (str, Path)):
            build = getattr(data, "build", None)
        return cls.from_bytes(raw, build=build)

    def liquid_params(self, type_id: int | None, kind: int | None) -> int | None:
        """The parameter set the client takes alone while the camera is under this liquid, or None
        (water, ocean: the lights' under-water slot). 3.3.5: the liquid's LiquidType.LightID (magma
        7, slime 6 on stock tables); without that table (and in 1.12, 2.4.3) magma and slime take
        the fixed sets 7 and 6 ([B]), water and ocean none."""
        if self.liquid_lights is not None and type_id is not None and int(type_id) in self.liquid_lights:
            return self.liquid_lights[int(type_id)] or None
        return FIXED_LIQUID_PARAMS.get(kind)

    def map_light(self, map_id: int, *, exact: bool = False, storm: float = 0.0) -> "MapLight":
        return MapLight(self, int(map_id), exact=exact, storm=storm)


def _liquid_lights(raw: bytes | None, build: str, warnings: list) -> dict | None:
    """LiquidType ID -> LightID from a 3.3.5 LiquidType.dbc (None: no table, or no LightID column)."""
    if raw is None:
        return None
    try:
        dbc = DbcFile.from_bytes(raw, "LiquidType.dbc")
        det = detect_schema(dbc, "LiquidType", None, build)
    except FormatError as exc:
        warnings.append(f"LiquidType.dbc ignored for the liquids' light: {exc}")
        return None
    if det.schema is None or "LightID" not in (det.schema.dtype.names or ()):
        return None
    rows = dbc.with_schema(det.schema).records
    return dict(zip(rows["ID"].astype(np.int64).tolist(), rows["LightID"].astype(np.int64).tolist()))


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
# Parameter slots of Light.LightParamsID (client.md section 6): clear above water, clear under
# water, storm, storm under water; the under-water slot is the clear one + 1, storm + 2.
SLOT_CLEAR, SLOT_UNDER_WATER, SLOT_STORM = 0, 1, 2
FOG_END_MIN = 10.0               # yards: the client's floor on a light's fog end
_F32 = np.float32
_INCH = np.float32(0.027777778)  # the client's 1/36 for the fog end


def _band_rows(records: np.ndarray, first_ids: np.ndarray, count: int):
    """Per (light, band): key count (n, count), times (n, count, 17) and data (n, count, 17) of
    LightIntBand/LightFloatBand rows ``first_ids + k``; a band without a row has no keys. The
    17th key is a zero the client reads when no segment holds the hour."""
    n = len(first_ids)
    num = np.zeros((n, count), np.int64)
    times = np.zeros((n, count, MAX_KEYS + 1), np.int64)
    data = np.zeros((n, count, MAX_KEYS + 1), records.dtype["Data"].base if len(records) else np.int32)
    if not len(records) or not n:
        return num, times, data
    ids = records["ID"].astype(np.int64)
    order = np.argsort(ids, kind="stable")
    sids = ids[order]
    want = first_ids[:, None] + np.arange(count)[None, :]
    pos = np.clip(np.searchsorted(sids, want), 0, len(sids) - 1)
    found = sids[pos] == want
    rows = records[order[pos]]
    num[:] = np.where(found, np.clip(rows["Num"], 0, MAX_KEYS), 0)
    times[..., :MAX_KEYS] = np.where(found[..., None], rows["Time"], 0)
    data[..., :MAX_KEYS] = np.where(found[..., None], rows["Data"], 0)
    return num, times, data


def _segments(num: np.ndarray, times: np.ndarray, t: int):
    """The client's key search (FindBandSegment) for every band at once: the first key ``cur``
    whose segment to the next (the last wrapping to the first, +2880) holds ``t``; returns
    (cur, next, fraction as float32). No segment holds it (keys out of order): cur is the key
    after the last, the fraction 0, as the client reads it."""
    k = np.arange(MAX_KEYS)
    nk = np.maximum(num, 1)[..., None]
    nxt = np.where(k + 1 < nk, k + 1, 0)
    t0 = times[..., :MAX_KEYS]
    t1 = np.take_along_axis(t0, nxt, -1)
    rising = t0 < t1
    holds = np.where(rising, (t0 <= t) & (t <= t1), (t <= t1) | (t0 <= t)) & (k < num[..., None])
    found = holds.any(-1)
    first = np.argmax(holds, -1)
    cur = np.where(found, first, num)
    nxt_of = np.take_along_axis(nxt, first[..., None], -1)[..., 0]
    nex = np.where(found, nxt_of, 0)
    a = np.take_along_axis(times, cur[..., None], -1)[..., 0]
    b = np.take_along_axis(times, nex[..., None], -1)[..., 0]
    wrap = found & ~(a < b)
    b = np.where(wrap, b + DAY, b)
    tt = np.where(wrap & (t < a), t + DAY, t)
    span = np.where(found & (b != a), b - a, 1)
    frac = np.where(found, (tt - a).astype(_F32) / span.astype(_F32), _F32(0))
    return cur, nex, frac.astype(_F32)


def _hour_values(rows, t: int, exact: bool) -> tuple[np.ndarray, np.ndarray]:
    """Every light's 18 colours (n, 18, 3) and 6 floats (n, 6) at half-minute ``t`` as one
    light's record (DNComputeInfoClamped): colour channels rounded to nearest-even bytes (``exact``:
    not rounded), float band 0 in yards (at least 10), band 1 clamped to [-1, 1]. Rows of lights
    without a parameter set read 0."""
    (cn, ct, cd), (fn, ft, fd), has = rows
    cur, nex, f = _segments(cn, ct, t)
    va = np.take_along_axis(cd, cur[..., None], -1)[..., 0].astype(np.int64) & 0xFFFFFF
    vb = np.take_along_axis(cd, nex[..., None], -1)[..., 0].astype(np.int64) & 0xFFFFFF
    sh = np.array([16, 8, 0])
    a = (va[..., None] >> sh) & 255
    b = (vb[..., None] >> sh) & 255
    if exact:
        col = (b - a) * f.astype(np.float64)[..., None] + a
    else:
        col = np.rint((b - a).astype(_F32) * f[..., None] + a.astype(_F32)).astype(np.float64)
    col[cn == 0] = 0.0
    cur, nex, f = _segments(fn, ft, t)
    fa = np.take_along_axis(fd, cur[..., None], -1)[..., 0]
    fb = np.take_along_axis(fd, nex[..., None], -1)[..., 0]
    if exact:
        fa, fb = fa.astype(np.float64), fb.astype(np.float64)
        fa[:, 0] /= UNITS
        fb[:, 0] /= UNITS
        fl = (fb - fa) * f + fa
    else:
        fa, fb = fa.astype(_F32), fb.astype(_F32)
        fa[:, 0] *= _INCH
        fb[:, 0] *= _INCH
        fl = ((fb - fa) * f + fa).astype(np.float64)
    fl[fn == 0] = 0.0
    fl[:, 0] = np.maximum(fl[:, 0], FOG_END_MIN)
    fl[:, 1] = np.clip(fl[:, 1], -1.0, 1.0)
    col[~has] = 0.0   # no parameter set: the client's record stays cleared (no floor either)
    fl[~has] = 0.0
    return col, fl


def _mix_storm(col, fl, storm_col, storm_fl, amount: float, exact: bool) -> None:
    """The storm set mixed into each light's clear record by ``amount`` (DNMixInfo): colours move
    by alpha/256 of the way (alpha = the amount in bytes; 255 copies), fog end, fog start scaler
    and cloud density linearly; the other floats stay the clear set's."""
    f = min(max(float(amount), 0.0), 1.0)
    alpha = int(np.rint(f * 255.0)) & 0xFF
    if exact:
        col += (storm_col - col) * f
    elif alpha == 255:
        col[:] = storm_col
    elif alpha:
        col += np.floor((storm_col - col) * alpha / 256.0)
    for i in (0, 1, 3):
        fl[:, i] += (storm_fl[:, i] - fl[:, i]) * f


def light_world_positions(coords: np.ndarray) -> np.ndarray:
    """Light.dbc GameCoords (n, 3) -> world (n, 3) yards, as the client converts them."""
    c = np.asarray(coords, np.float64) / UNITS
    return np.stack([CORNER - c[:, 2], CORNER - c[:, 0], c[:, 1]], -1)


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


def model_colors(ambient, diffuse, *, exact: bool = False) -> tuple[tuple, tuple]:
    """The colours models and WMOs are lit with outdoors (DNUpdateColors), from the blended ambient
    and diffuse (0..255, three channels each): (ambient pulled half-way to the diffuse and lifted
    by 16, at most 255; the diffuse pulled half-way to the ambient), each half-way step rounded
    down per channel (plain floats: the view calls this every frame)."""
    half = (lambda x, y: x + (y - x) / 2) if exact else (lambda x, y: x + math.floor((y - x) / 2))
    a, d = [float(x) for x in ambient], [float(x) for x in diffuse]
    return (tuple(min(half(x, y) + 16.0, 255.0) for x, y in zip(a, d)),
            tuple(half(y, x) for x, y in zip(a, d)))


# The rules light show names where the decodes disagree (docs/light.md, client.md section 6).
RULES = {
    "blend_order": "client (DNGatherLights): the global light's record first, then the local lights "
                   "in reach from a max-heap on squared distance, farthest first, the nearest last "
                   "(noggit3/wowmapview sort by falloff end with multiplied weights: not followed)",
    "falloff": "weight 1 inside falloff start, else 1 - (d - start)/(end - start); in reach where "
               "d^2 < end^2 (3.3.5) or d <= end (1.12, 2.4.3)",
    "band_rows": "int band k = LightIntBand row p*18 - 17 + k, float band k = LightFloatBand row p*6 - 5 + k "
                 "(the client; wowmapview/noggit read p*18 + k)",
    "global_light": "the map's last Light row at (0,0,0), else Light 1 (the client's DNLoadMapLights; "
                    "not map 0's global as older viewers do)",
    "fog": "fog end from float band 0 / 36 yards, at least 10 yards and the start scaler clamped to "
           "[-1, 1] per light before blending (DNComputeInfoClamped)",
    "floats_blended": "fog end, fog start scaler and cloud density blend; celestial glow and float bands "
                      "4 and 5 keep the global light's",
}
ROUNDING = {
    "byte": "client bytes: a band's channel lrint (nearest-even) per hour, every blend round_even(v - 0.5) "
            "in float32 (SkyLerp), so an unchanged odd channel loses 1 per blend",
    "exact": "exact: floats throughout (for comparison; not what the client draws)",
}


class MapLight:
    """A map's lights as the client blends them, precomputed for per-frame lookups:
    :meth:`evaluate` writes the colours (18 x RGB, 0..255) and floats (6; fog end in yards) into
    :attr:`colors` / :attr:`floats`. ``storm`` (0..1) mixes each light's storm parameter set in,
    as the client's weather does; ``exact`` keeps floats where the client rounds to bytes."""

    def __init__(self, tables: LightTables, map_id: int, *, exact: bool = False, storm: float = 0.0):
        self.tables, self.map_id, self.exact = tables, map_id, exact
        self.storm = min(max(float(storm), 0.0), 1.0)
        self.notes: list[str] = []
        L = tables.lights
        on_map = L["ContinentID"] == map_id
        is_global = (L["GameCoords"] == 0).all(1)
        glob = np.flatnonzero(on_map & is_global)
        if len(glob):
            g = int(glob[-1])
            self.global_rule = "the map's last Light row at (0,0,0)"
            if len(glob) > 1:
                self.notes.append(f"map {map_id} has {len(glob)} global lights (Light "
                                  f"{', '.join(str(int(i)) for i in L['ID'][glob])}): the last, "
                                  f"Light {int(L['ID'][g])}, counts, as in the client")
        else:
            one = np.flatnonzero(L["ID"] == 1)
            if not len(one):
                raise LightUnavailable(f"Light.dbc has no global light for map {map_id} and no Light 1 "
                                       "to stand in (the client's rule)")
            g = int(one[0])
            self.global_rule = "Light 1 stands in (the map has no Light row at (0,0,0))"
            self.notes.append(f"map {map_id} has no global light: Light 1 stands in (map "
                              f"{int(L['ContinentID'][g])}'s), as in the client")
        local = np.flatnonzero(on_map & ~is_global)        # file order, as the client pushes them
        self.rows = np.concatenate([local, [g]]).astype(np.int64)
        self.n_local = n_local = len(local)
        self.global_index = n_local
        n = len(self.rows)
        rec = L[self.rows]
        self.ids = rec["ID"].astype(np.int64)
        self.params_ids = rec["LightParamsID"][:, 0].astype(np.int64)
        self._param_slots = rec["LightParamsID"].astype(np.int64)
        self.position = np.zeros((n, 3))
        self.position[:n_local] = light_world_positions(rec["GameCoords"][:n_local])
        self.falloff = np.zeros((n, 2))
        self.falloff[:n_local, 0] = rec["GameFalloffStart"][:n_local].astype(np.float64) / UNITS
        self.falloff[:n_local, 1] = rec["GameFalloffEnd"][:n_local].astype(np.float64) / UNITS
        # float32 as the client keeps them (the distance tests and weights are float32 there)
        c = rec["GameCoords"][:n_local].astype(_F32) / _F32(UNITS)
        self._pos32 = np.stack([_F32(CORNER) - c[:, 2], _F32(CORNER) - c[:, 0], c[:, 1]], -1).astype(_F32)
        self._start32 = (rec["GameFalloffStart"][:n_local].astype(_F32) / _F32(UNITS)).astype(_F32)
        self._end32 = (rec["GameFalloffEnd"][:n_local].astype(_F32) / _F32(UNITS)).astype(_F32)
        self._end2 = (self._end32 * self._end32).astype(_F32)
        self._inclusive = tables.build in ("1.12", "2.4.3")   # 1.12: d <= end; 3.3.5: d^2 < end^2
        self._fallback_to_clear = self._inclusive    # 1.12 [B]: an unset slot takes the clear set
        # per-frame constants: squared distances as |p|^2 - 2 p.c + |c|^2 (one matrix-vector
        # product, float64) to find the few lights in reach; those are then tested as the client does
        p = self.position[:n_local]
        reach = (self.falloff[:n_local, 1] + 1.0) ** 2   # a yard of slack over the float32 test
        self._a = np.ascontiguousarray(np.concatenate([-2.0 * p, ((p * p).sum(1) - reach)[:, None]], 1))
        self._c4 = np.ones(4)
        self._d2 = np.zeros(n_local)
        self._near = np.zeros(n_local, bool)
        self._order = np.arange(n_local)
        self._active = np.zeros(n_local, np.int64)
        self._lerp = np.zeros(BANDS_PER_SET * 3, _F32)   # SkyLerp's buffer
        # the floats a blend moves: fog end, fog start scaler, cloud density
        self._blended_floats = np.array([0, 1, 3]) + BANDS_PER_SET * 3
        self._slot_rows: dict[int, tuple] = {}
        self._liquid_cache: dict = {}
        self.liquid: int | None = None   # the liquid's parameter set the last evaluate took
        self._slot_values: dict[int, tuple] = {}
        self._time = None
        self.weights = np.zeros(n)       # each light's blend factor (the global: 1, the base)
        self.shares = np.zeros(n)        # each light's share of the result (sums to 1)
        self.blend_order: list[int] = []  # indices of the local lights in the order blended
        self.blend = np.zeros(BANDS_PER_SET * 3 + FLOATS_PER_SET)
        self.colors = self.blend[:BANDS_PER_SET * 3].reshape(BANDS_PER_SET, 3)
        self.floats = self.blend[BANDS_PER_SET * 3:]
        self.active = self._active[:0]   # the local lights in reach, in file order
        self.slot = SLOT_CLEAR
        ints, _floats, has = self._rows_for(SLOT_CLEAR)
        #: what every consumer of this light says (view, export web, export gltf --clock, light show)
        self.warnings: list[str] = []
        g = self.global_index
        if not has[g] or not ints[0][g, :2].any():   # diffuse and ambient: what lights the ground
            empty = next((n for n in self.notes if "without keys" in n), "")
            self.warnings.append(
                f"the map's global light (Light {int(self.ids[g])}, LightParams {int(self._param_slots[g, 0])}) has "
                "no keys for its diffuse and ambient colours in LightIntBand.dbc: they read as 0 and the ground is "
                "lit black (are Light, LightParams and LightIntBand from one build?)" + (f"; {empty}" if empty else ""))

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def rounding(self) -> str:
        return "exact" if self.exact else "byte"

    def _rows_for(self, slot: int):
        """The band rows of every light's parameter set in ``slot`` (made once per slot)."""
        got = self._slot_rows.get(slot)
        if got is not None:
            return got
        t = self.tables
        pid = self._param_slots[:, slot] if slot < self._param_slots.shape[1] else np.zeros(len(self), np.int64)
        if self._fallback_to_clear and slot:
            pid = np.where(pid > 0, pid, self._param_slots[:, SLOT_CLEAR])
        if t.params is not None:
            has = np.isin(pid, t.params["ID"].astype(np.int64)) & (pid > 0)
        else:
            has = pid > 0
        missing = [int(self.ids[i]) for i in np.flatnonzero(~has)]
        if missing:
            what = "no parameter set" if slot == SLOT_CLEAR else f"no parameter set in slot {slot}"
            self.notes.append(f"{len(missing)} light(s) with {what} (Light {', '.join(map(str, missing[:8]))}"
                              f"{'...' if len(missing) > 8 else ''}): their record reads 0, as in the client")
        ints = _band_rows(t.int_bands, pid * BANDS_PER_SET - 17, BANDS_PER_SET)
        floats = _band_rows(t.float_bands, pid * FLOATS_PER_SET - 5, FLOATS_PER_SET)
        if slot == SLOT_CLEAR:
            empty = int(((ints[0] == 0) & has[:, None]).sum() + ((floats[0] == 0) & has[:, None]).sum())
            if empty:
                self.notes.append(f"{empty} band(s) without keys (or rows) read as 0")
        got = self._slot_rows[slot] = (ints, floats, has)
        return got

    def set_time(self, half_minutes: float, *, under_water: bool = False) -> None:
        """Every light's record at this hour (only when the hour or the slot changes): the clear
        set of the slot (the under-water one below a liquid surface), the storm set mixed in."""
        t = int(half_minutes) % DAY
        slot = SLOT_UNDER_WATER if under_water else SLOT_CLEAR
        key = (t, slot)
        if key == self._time:
            return
        col, fl = _hour_values(self._rows_for(slot), t, self.exact)
        if self.storm > 0.0:
            scol, sfl = _hour_values(self._rows_for(slot + SLOT_STORM), t, self.exact)
            _mix_storm(col, fl, scol, sfl, self.storm, self.exact)
        self._values = np.concatenate([col.reshape(len(self), -1), fl], 1)
        self._values32 = self._values.astype(_F32)
        self._time, self.slot = key, slot

    def _in_reach(self, px: float, py: float, pz: float) -> list[int]:
        """The local lights the client would push, in file order (its reach test in float32)."""
        if not self.n_local:
            self.active = self._active[:0]
            return []
        c4 = self._c4
        c4[0], c4[1], c4[2] = px, py, pz
        np.dot(self._a, c4, out=self._d2)
        cc = px * px + py * py + pz * pz
        np.less(self._d2, -cc, out=self._near)
        k = int(np.count_nonzero(self._near))
        if not k:
            self.active = self._active[:0]
            return []
        cand = np.compress(self._near, self._order, out=self._active[:k])
        q = np.array([px, py, pz], _F32)
        d = self._pos32[cand] - q
        d2 = (d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2] + d[:, 0] * d[:, 0]).astype(_F32)
        if self._inclusive:
            inside = np.sqrt(d2) <= self._end32[cand]
        else:
            inside = d2 < self._end2[cand]
        self.active = cand[inside]
        self._act_d2 = d2[inside]
        self._keys = dict(zip(self.active.tolist(), self._act_d2.tolist()))
        return self.active.tolist()

    def _before(self, a: int, b: int) -> bool:
        """The client's heap order (LightQEOrder): ``a`` pops before ``b`` when it is farther
        (or as far); lights whose centres are within 1/3 yard: the larger falloff start first."""
        pa, pb = self._pos32[a], self._pos32[b]
        d = pa - pb
        if float(np.sqrt(_F32(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]))) > 0.33333334:
            return self._keys[b] <= self._keys[a]
        return float(self._start32[b]) <= float(self._start32[a])

    def _heap_order(self, lights: list[int]) -> list[int]:
        """The order the client's 1-based binary heap pops ``lights`` (pushed in this order)."""
        if len(lights) < 2:
            return lights
        h = [None]
        for e in lights:                          # push: sift up
            h.append(e)
            i = len(h) - 1
            while i > 1 and self._before(e, h[i >> 1]):
                h[i] = h[i >> 1]
                i >>= 1
            h[i] = e
        out = []
        while len(h) > 1:                          # pop: the top, then the last sifted down
            out.append(h[1])
            last = h.pop()
            n = len(h) - 1
            if n >= 1:
                i = 1
                while i <= n >> 1:
                    c = 2 * i
                    if c < n and self._before(h[c + 1], h[c]):
                        c += 1
                    if self._before(last, h[c]):
                        break
                    h[i] = h[c]
                    i = c
                h[i] = last
        return out

    def _liquid_record(self, pid: int, t: int) -> np.ndarray | None:
        """A liquid's own parameter set at hour ``t`` as one record (None: the set is missing)."""
        key = (pid, t)
        got = self._liquid_cache.get(key)
        if got is None:
            tb = self.tables
            if tb.params is not None and not (tb.params["ID"] == pid).any():
                return None
            ids = np.array([pid], np.int64)
            rows = (_band_rows(tb.int_bands, ids * BANDS_PER_SET - 17, BANDS_PER_SET),
                    _band_rows(tb.float_bands, ids * FLOATS_PER_SET - 5, FLOATS_PER_SET), np.ones(1, bool))
            col, fl = _hour_values(rows, t, self.exact)
            got = self._liquid_cache[key] = np.concatenate([col.reshape(1, -1), fl], 1)[0]
        return got

    def evaluate(self, position, half_minutes: float, *, under_water: bool = False,
                 liquid_params: int | None = None) -> np.ndarray:
        """The light at ``position`` (world x, y, z; the client queries at the camera's target in
        3.3.5, its eye in 1.12) and hour: fills :attr:`weights`, :attr:`shares`, :attr:`colors`
        and :attr:`floats` (views of one buffer, returned). ``under_water``: the camera is below a
        liquid surface (the client's under-water parameter slot); ``liquid_params``: the camera is
        under a liquid with a light of its own (:meth:`LightTables.liquid_params`): that set alone,
        no lights, no storm (DNUpdateLight)."""
        self.liquid = None
        if liquid_params:
            rec = self._liquid_record(int(liquid_params), int(half_minutes) % DAY)
            if rec is not None:
                self.liquid = int(liquid_params)
                self.weights.fill(0.0)
                self.shares.fill(0.0)
                self.blend_order = []
                self.active = self._active[:0]
                self.blend[:] = rec
                return self.blend
        self.set_time(half_minutes, under_water=under_water)
        px, py, pz = float(position[0]), float(position[1]), float(position[2])
        w, s = self.weights, self.shares
        w.fill(0.0)
        s.fill(0.0)
        gi = self.global_index
        w[gi] = s[gi] = 1.0
        lights = self._in_reach(px, py, pz)
        order = self._heap_order(lights) if lights else lights
        self.blend_order = order
        if not order:
            self.blend[:] = self._values[gi]
            return self.blend
        nc = BANDS_PER_SET * 3
        # each light's factor (DNAddLight, float32): 1 inside the falloff start, else
        # 1 - (d - start)/(end - start), not below 0
        act = self.active
        dist = np.sqrt(self._act_d2)
        r1, r2 = self._start32[act], self._end32[act]
        with np.errstate(divide="ignore", invalid="ignore"):
            g = _F32(1.0) - (dist - r1) / (r2 - r1)
        fac = dict(zip(act.tolist(), np.where(r1 < dist, np.where(g >= 0, g, _F32(0.0)), _F32(1.0)).tolist()))
        if self.exact:
            acc = self._values[gi].copy()
        else:
            acc = self._values32[gi].copy()
            hi = self._lerp
        fidx = self._blended_floats
        rest = 1.0
        for i in reversed(order):       # shares: what the lights blended after each one leave of it
            f = fac[i]
            s[i] = f * rest
            rest *= 1.0 - f
        s[gi] = rest
        for i in order:
            f = fac[i]
            w[i] = f
            if self.exact:
                v = self._values[i]
                acc[:nc] += (v[:nc] - acc[:nc]) * f
                acc[fidx] += (v[fidx] - acc[fidx]) * f
                continue
            t = _F32(f)
            v = self._values32[i]
            a, b = acc[:nc], v[:nc]
            # SkyLerp goes from the larger value down (a - (a - b) t) or from the smaller up
            # ((b - a) t + a): in float32 the two are the same number (negation is exact), so one
            # form serves; then round_even(v - 0.5)
            np.subtract(b, a, out=hi)
            np.multiply(hi, t, out=hi)
            np.add(hi, a, out=hi)
            np.subtract(hi, _F32(0.5), out=hi)
            np.rint(hi, out=hi)
            np.add(hi, _F32(0.0), out=a)   # (the client's bytes: no -0)
            fa = acc[fidx]
            acc[fidx] = (v[fidx] - fa) * t + fa
        self.blend[:] = acc
        return self.blend

    def lights_used(self) -> list[dict]:
        """The lights of the last :meth:`evaluate` in the order blended (the global first): ID,
        blend factor (``weight``) and share of the result (``share``; they sum to 1)."""
        if self.liquid is not None:
            return []
        return [{"id": int(self.ids[i]), "weight": float(self.weights[i]), "share": float(self.shares[i])}
                for i in [self.global_index, *self.blend_order]]

    # ---- results by name
    def result(self, position, half_minutes: float, *, under_water: bool = False,
               liquid_params: int | None = None) -> dict:
        """The JSON-ready light: colours by band (0..255), floats by band (fog end in yards), the
        colours models and WMOs take, the lights blended (in the client's order), the rules."""
        here = np.asarray(position, np.float64)
        self.evaluate(here, half_minutes, under_water=under_water, liquid_params=liquid_params)
        gi = self.global_index
        lights = [] if self.liquid is not None else [{
            "id": int(self.ids[gi]), "params_id": int(self._param_slots[gi, self.slot]), "global": True,
            "weight": 1.0, "share": float(self.shares[gi]), "blend_order": 0,
            "position": None, "falloff": None, "distance": None,
        }]
        for k, i in enumerate(self.blend_order, 1):
            lights.append({
                "id": int(self.ids[i]), "params_id": int(self._param_slots[i, self.slot]), "global": False,
                "weight": float(self.weights[i]), "share": float(self.shares[i]), "blend_order": k,
                "position": [float(v) for v in self.position[i]],
                "falloff": [float(v) for v in self.falloff[i]],
                "distance": float(np.linalg.norm(self.position[i] - here)),
            })
        colors = {name: [float(v) for v in self.colors[i]] for i, name in enumerate(COLOR_BANDS)}
        floats = {name: float(self.floats[i]) for i, name in enumerate(FLOAT_BANDS)}
        amb, dif = model_colors(self.colors[1], self.colors[0], exact=self.exact)
        rules = dict(RULES)
        rules["global_light"] = self.global_rule + " (the client's DNLoadMapLights)"
        rules["rounding"] = ROUNDING[self.rounding]
        rules["slot"] = (f"LightParamsID[{self.slot}]: " + ("clear weather, under water" if self.slot
                                                             else "clear weather, above water")
                         + (f"; the storm set LightParamsID[{self.slot + SLOT_STORM}] mixed in by "
                            f"{self.storm:g}" if self.storm > 0 else "")
                         + ("; a slot without a set falls back to the clear one (1.12 [B])"
                            if self._fallback_to_clear and self.slot else ""))
        if self.liquid is not None:
            rules["slot"] = (f"under a liquid with a light of its own: LightParams {self.liquid} alone, no "
                             "lights, no storm (DNUpdateLight; LiquidType.LightID, or magma 7 / slime 6)")
        rules["model_colors"] = ("models and WMOs (DNUpdateColors): ambient half-way to the diffuse "
                                 "+16 (at most 255), diffuse half-way to the ambient")
        return {"colors": colors, "floats": floats,
                "model_colors": {"ambient": [float(v) for v in amb], "diffuse": [float(v) for v in dif]},
                "lights": lights, "notes": list(self.notes), "rules": rules}


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
    model_ambient: tuple = (0.0, 0.0, 0.0)   # models and WMOs (DNUpdateColors)
    model_diffuse: tuple = (0.0, 0.0, 0.0)


def scene_light(map_light: MapLight, position, half_minutes: float, *, under_water: bool = False,
                liquid_params: int | None = None) -> SceneLight:
    """The light at ``position`` and hour as a renderer takes it (colours 0..1; fog in yards:
    start = end x the start scaler, not below 0; the end is at least 10 already)."""
    map_light.evaluate(position, half_minutes, under_water=under_water, liquid_params=liquid_params)
    v = map_light.blend.tolist()
    k = 1.0 / 255.0

    def rgb(i):
        return (v[3 * i] * k, v[3 * i + 1] * k, v[3 * i + 2] * k)

    f0 = 3 * BANDS_PER_SET
    end, scaler = v[f0], v[f0 + 1]
    amb, dif = model_colors(v[3:6], v[0:3], exact=map_light.exact)
    return SceneLight(
        sun_dir=_sun_tuple(int(half_minutes) % DAY), sun_color=rgb(0), ambient=rgb(1), fog_color=rgb(7),
        fog=(max(end * scaler, 0.0), end), sky=(rgb(2), rgb(3), rgb(4), rgb(5), rgb(6), rgb(7)),
        water=(rgb(16), rgb(17), rgb(14), rgb(15)),
        model_ambient=tuple(float(c) * k for c in amb), model_diffuse=tuple(float(c) * k for c in dif))


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
        if not rows:
            return mid, text
        known = next((d for i, d in rows if i == mid), None)
        if known is None:
            raise UsageError(f"--map {text}: no map with that ID in Map.dbc (IDs {min(i for i, _ in rows)} to "
                             f"{max(i for i, _ in rows)})")
        return mid, known
    for mid, directory in rows:
        if directory.lower() == text.lower():
            return mid, directory
    if not rows:
        raise UsageError(f"--map {text}: no Map.dbc to look the name up in (give the map's numeric ID)")
    near = [d for _, d in rows if text.lower() in d.lower()][:5]
    raise UsageError(f"--map {text}: not in Map.dbc" + (f" (did you mean {', '.join(near)}?)" if near else ""))
