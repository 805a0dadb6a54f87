"""Where ``wowgrass view`` starts without ``--camera``: at eye height where grass grows, looking
along the ground across it.

1. The start tile: the tile nearest the centre of the source's tiles (only tiles the data has:
   a WDT may list tiles an extract lacks, and GameSource leaves those out).
2. Candidate spots: the tile's grass instances (from its bundle, drawn or not: a real extract
   often lacks the grass models), standing where the most grass is within 12 units. Without
   grass (fewer than 20 instances), no eye-height spot: an overview from above the tile's edge,
   looking down at its centre (:func:`overview`; eye height over bare ground framed a slab of
   hillside against the sky).
3. For each spot and 16 headings: the grass in a 45-degree sector 6..90 units ahead (what the
   view shows), times a penalty when the ground ahead rises above the eye line (a hillside: the
   steepest elevation angle of the ground 4..60 units ahead, over the
   heading and its two neighbours) and when a 4-unit corridor 16..60 units ahead, within 6 units
   of the view's centre line, is bare (looking down a road or a track).
4. The best spot and heading; the pitch follows the ground's slope ahead, 8 degrees below it.
Everything runs once at start-up, vectorised over spots and headings.
"""

from __future__ import annotations

import math

import numpy as np

from ..camera import Camera
from ..constants import EYE_HEIGHT, TILE_SIZE

HEADINGS = 16
SECTOR = math.radians(22.5)  # half-width of the sector counted as "in view"
AHEAD = (6.0, 90.0)  # grass counted this far ahead (world units)
HILL_SAMPLES = np.array([4.0, 8.0, 14.0, 22.0, 32.0, 45.0, 60.0])
MAX_RISE = math.tan(math.radians(6.0))  # ground ahead above this elevation angle: a hillside
# a road: a corridor this wide (half-width), this far ahead, this far either side of the view's
# centre line, holding under 30% of the grass the sector's density would put there
ROAD_HALF_WIDTH = 2.0
ROAD_SPAN = (16.0, 60.0)
ROAD_OFFSETS = (-6.0, -3.0, 0.0, 3.0, 6.0)


def start_tile(source) -> tuple[int, int]:
    """The source's tile nearest the centre of its tiles (a source lists only the tiles its data
    has: GameSource drops those a WDT lists but the extract lacks)."""
    keys = np.array(source.tiles, np.float64).reshape(-1, 2)
    d = np.hypot(*(keys - keys.mean(axis=0)).T)
    return tuple(int(v) for v in keys[int(np.argmin(d))])


GRASS_SEARCH = 16  # tiles loaded at most, nearest the centre first, looking for one with grass


def _grass_count(scene, tile) -> int:
    """Grass instances of resident ``tile`` inside its margin (choose_start's spots), 0 if none."""
    from .streaming import tiles_centre

    res = scene.tiles.get(tuple(tile))
    xy = getattr(res, "grass_xy", None)
    if xy is None or not len(xy):
        return 0
    cx, cy = tiles_centre([tile])
    xy = np.asarray(xy, np.float64)
    return int(((np.abs(xy[:, 0] - cx) < TILE_SIZE / 2 - 20) & (np.abs(xy[:, 1] - cy) < TILE_SIZE / 2 - 20)).sum())


def grass_tile(scene, source, first) -> tuple[int, int]:
    """The tile to start on: ``first`` (the centre's) when grass grows there, else the nearest tile
    to the centre where it does (resident ones first, then up to GRASS_SEARCH more loaded to
    look); a tile that failed to load is never the start (its ground is missing: the camera would
    look at sky). None with grass: the nearest tile that loaded."""
    from .streaming import tiles_centre

    keys = [tuple(int(v) for v in k) for k in source.tiles]
    if not keys:
        return first
    arr = np.array(keys, np.float64)
    order = [keys[i] for i in np.argsort(np.hypot(*(arr - arr.mean(axis=0)).T), kind="stable")]
    errors = getattr(scene, "errors", {}) or {}

    def good(k):
        return k not in errors and scene.tiles.get(k) is not None and getattr(scene.tiles[k], "adt", None) is not None

    if good(tuple(first)) and _grass_count(scene, first) >= 20:
        return tuple(first)
    for k in order:  # already resident: no load
        if good(k) and _grass_count(scene, k) >= 20:
            return k
    loaded = 0
    for k in order:
        if k in scene.tiles or k in errors:
            continue
        if loaded >= GRASS_SEARCH:
            break
        try:
            scene.update((*tiles_centre([k]), 0.0), block=True)
        except Exception:  # noqa: BLE001 - a tile that cannot load: not a start (scene.errors names it)
            pass
        loaded += 1
        if good(k) and _grass_count(scene, k) >= 20:
            return k
    if good(tuple(first)):
        return tuple(first)
    return next((k for k in order if good(k)), tuple(first))


def ground_heights(scene, x, y) -> np.ndarray:
    """Terrain heights under points (x, y) (NaN where no resident tile covers them)."""
    x, y = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(y, np.float64))
    out = np.full(x.shape, np.nan)
    for t in scene.tiles.values():
        if t.adt is None:
            continue
        ch = t.adt.chunk_index_at(x, y)
        m = ch >= 0
        if m.any():
            out[m] = t.adt.heights_at(ch[m], x[m], y[m])
    return out


def choose_start(scene, tile, *, eye_height: float = EYE_HEIGHT) -> tuple[np.ndarray, float, float]:
    """(position (3,), yaw, pitch) of the first view on resident tile ``tile``."""
    from .streaming import tiles_centre

    cx, cy = tiles_centre([tile])
    res = scene.tiles.get(tuple(tile))
    grass = getattr(res, "grass_xy", None)
    grass = np.zeros((0, 2)) if grass is None else np.asarray(grass, np.float64)
    grass = grass[:: max(1, len(grass) // 4000)]
    inside = (np.abs(grass[:, 0] - cx) < TILE_SIZE / 2 - 20) & (np.abs(grass[:, 1] - cy) < TILE_SIZE / 2 - 20)
    if inside.sum() >= 20:
        pts = grass[inside]
        # spots: a spread of grass positions, ranked by the grass around them
        spots = pts[np.random.default_rng(0).choice(len(pts), min(len(pts), 160), replace=False)]
        near = np.hypot(*(spots[:, None, :] - pts[None, :: max(1, len(pts) // 4000), :]).transpose(2, 0, 1))
        around = (near < 12.0).sum(axis=1)
        spots = spots[np.argsort(-around, kind="stable")[:40]]
    else:   # no grass to stand in: look across the whole tile from above its edge
        view = overview(scene, tile)
        if view is not None:
            return view
        g = np.linspace(-TILE_SIZE / 2 + 40, TILE_SIZE / 2 - 40, 6)
        spots = np.stack(np.meshgrid(cx + g, cy + g), -1).reshape(-1, 2)
    ground = ground_heights(scene, spots[:, 0], spots[:, 1])
    spots, ground = spots[np.isfinite(ground)], ground[np.isfinite(ground)]
    if not len(spots):
        z = ground_heights(scene, cx, cy)
        return np.array([cx, cy, (0.0 if not np.isfinite(z) else float(z)) + eye_height]), math.radians(30.0), math.radians(-8.0)
    eye = ground + eye_height
    yaw = (np.arange(HEADINGS) + 0.5) * 2 * math.pi / HEADINGS
    dirs = np.stack([np.cos(yaw), np.sin(yaw)], -1)  # yaw 0 = north (+X), positive towards west (+Y)
    # hillside: the steepest elevation of the ground ahead, per spot and heading
    sx = spots[:, None, None, 0] + dirs[None, :, None, 0] * HILL_SAMPLES[None, None, :]
    sy = spots[:, None, None, 1] + dirs[None, :, None, 1] * HILL_SAMPLES[None, None, :]
    h = ground_heights(scene, sx, sy)
    rise = np.nanmax(np.where(np.isfinite(h), (h - eye[:, None, None]) / HILL_SAMPLES, -1.0), axis=2)
    far = HILL_SAMPLES >= 14.0  # the ground's own slope ahead, from the ground under the eye
    slope = np.nanmean(np.where(np.isfinite(h[..., far]), (h[..., far] - ground[:, None, None]) / HILL_SAMPLES[far], 0.0), axis=2)
    if len(grass):
        rel = grass[None, :, :] - spots[:, None, :]  # (spots, grass, 2)
        dist = np.hypot(rel[..., 0], rel[..., 1])
        along = rel @ dirs.T  # (spots, grass, headings)
        across = rel[..., 0, None] * dirs[None, None, :, 1] - rel[..., 1, None] * dirs[None, None, :, 0]
        ahead = (dist[..., None] > AHEAD[0]) & (dist[..., None] < AHEAD[1])
        sector = ahead & (along > dist[..., None] * math.cos(SECTOR))
        in_sector = sector.sum(axis=1).astype(np.float64)
        # a road: the barest corridor near the view's centre line, against the sector's density
        sector_area = SECTOR * (AHEAD[1] ** 2 - AHEAD[0] ** 2)
        expect = in_sector / sector_area * (2 * ROAD_HALF_WIDTH) * (ROAD_SPAN[1] - ROAD_SPAN[0])
        span = (along > ROAD_SPAN[0]) & (along < ROAD_SPAN[1])
        barest = np.full(in_sector.shape, np.inf)
        for off in ROAD_OFFSETS:
            n = (span & (np.abs(across - off) < ROAD_HALF_WIDTH)).sum(axis=1)
            barest = np.minimum(barest, n)
        road = np.clip(barest / np.maximum(0.3 * expect, 1e-9), 0.0, 1.0)  # 0: bare, 1: 30%+ of the density
        score = in_sector * (0.25 + 0.75 * road)
    else:
        score = np.ones((len(spots), HEADINGS))
    # the view spans about three headings: a hillside beside the centre fills half the frame
    rise = np.maximum(rise, np.maximum(np.roll(rise, 1, axis=1), np.roll(rise, -1, axis=1)))
    score = score * np.where(rise > MAX_RISE, 0.05, 1.0) + 1e-3 * (MAX_RISE - np.minimum(rise, 1.0))
    i, j = np.unravel_index(int(np.argmax(score)), score.shape)
    pitch = math.atan(float(np.clip(slope[i, j], -0.35, 0.35))) - math.radians(8.0)
    return np.array([spots[i, 0], spots[i, 1], eye[i]]), float(yaw[j] % (2 * math.pi)), pitch


OVERVIEW_DISTANCE = 0.75 * TILE_SIZE   # from the tile's centre, horizontally
OVERVIEW_PITCH = math.radians(28.0)   # down to the centre at least: ground below the horizon
CLEARANCE = 6.0                       # the sight line passes this far above the ground


def overview(scene, tile) -> tuple[np.ndarray, float, float] | None:
    """(position, yaw, pitch) looking down at ``tile``'s centre from above its edge, for a tile with
    no grass to stand in (eye height over a bare tile frames a slab of hillside against the sky).
    Of 16 headings, the one whose eye can be lowest while its sight line clears the ground (the
    least hidden view); None when the tile has no ground."""
    from .streaming import tiles_centre

    cx, cy = tiles_centre([tile])
    g = np.linspace(-TILE_SIZE / 2 + 8, TILE_SIZE / 2 - 8, 33)
    grid = ground_heights(scene, *np.meshgrid(cx + g, cy + g))
    if not np.isfinite(grid).any():
        return None
    zc = float(np.nanmedian(grid))
    yaw = (np.arange(HEADINGS) + 0.5) * 2 * math.pi / HEADINGS
    dirs = np.stack([np.cos(yaw), np.sin(yaw)], -1)
    eyes = np.array([cx, cy]) - dirs * OVERVIEW_DISTANCE                        # (headings, 2)
    t = np.linspace(0.0, 0.9, 40)                                                # along the line to the centre
    line = eyes[:, None, :] + t[None, :, None] * (np.array([cx, cy]) - eyes)[:, None, :]
    h = ground_heights(scene, line[..., 0], line[..., 1])                        # (headings, 40)
    # the eye height z that keeps z + t * (zc - z) above h + CLEARANCE at every sample
    need = np.where(np.isfinite(h), (h + CLEARANCE - t[None, :] * zc) / (1.0 - t[None, :]), -np.inf)
    z = np.maximum(need.max(axis=1), zc + OVERVIEW_DISTANCE * math.tan(OVERVIEW_PITCH))
    j = int(np.argmin(z))
    pos = np.array([eyes[j, 0], eyes[j, 1], z[j]])
    cam = Camera(position=pos)
    cam.look_at((cx, cy, zc))
    return pos, float(cam.yaw % (2 * math.pi)), float(cam.pitch)


def default_camera(scene, source, *, camera=None, target=None, eye_height: float = EYE_HEIGHT) -> Camera:
    """``--camera``/``--target`` when given (a camera of two numbers X,Y stands at eye height above
    the ground there); else :mod:`.firstframe`'s choice: at eye height where grass grows on a tile
    the data has, looking along the ground across it."""
    if camera is not None and len(camera) == 3:
        cam = Camera(position=np.asarray(camera, np.float64))
        if target is not None:
            cam.look_at(target)
        return cam
    from .streaming import tiles_centre

    if camera is None:
        tile = start_tile(source)
        scene.update((*tiles_centre([tile]), 0.0), block=True)
        tile = grass_tile(scene, source, tile)
        pos, yaw, pitch = choose_start(scene, tile, eye_height=eye_height)
        cam = Camera(position=pos, yaw=yaw, pitch=pitch)
        if target is not None:
            cam.look_at(target)
        return cam
    x, y = float(camera[0]), float(camera[1])  # X,Y only: at eye height above the ground there
    scene.update((x, y, 0.0), block=True)
    z = scene.ground_height(x, y)
    z = (z if z is not None else 0.0) + eye_height
    cam = Camera(position=np.array([x, y, z]))
    if target is not None:
        cam.look_at(target)
    else:
        cam.yaw, cam.pitch = grassiest_heading(scene, x, y), math.radians(-8.0)
    return cam


def camera_warnings(scene, source, position) -> list[str]:
    """``warning: ...`` lines for a camera that shows nothing of the map: over no tile of it (say
    where its tiles are), or under the ground of the tile it is over."""
    from .streaming import tiles_centre
    from wowgrass.game.coords import tile_of, tile_origin

    x, y, z = (float(v) for v in position)
    tiles = sorted(source.tiles, key=lambda t: (t[1], t[0]))
    if not tiles:
        return []
    if tile_of(x, y) not in set(tiles):
        cols, rows = [c for c, _ in tiles], [r for _, r in tiles]
        x_hi, y_hi = tile_origin(min(cols), min(rows))
        x_lo, y_lo = tile_origin(max(cols) + 1, max(rows) + 1)
        cx, cy = tiles_centre([tiles[0]])
        return [f"warning: the camera ({x:.0f}, {y:.0f}) is over no tile of {getattr(source, 'map', 'the map')}: "
                f"its {len(tiles)} tile(s) span X {x_lo:.0f}..{x_hi:.0f}, Y {y_lo:.0f}..{y_hi:.0f} (columns "
                f"{min(cols)}..{max(cols)}, rows {min(rows)}..{max(rows)}); e.g. --camera {cx:.0f},{cy:.0f} stands "
                f"on tile {tiles[0][0]},{tiles[0][1]}"]
    ground = scene.ground_height(x, y)
    if ground is not None and z < ground:
        return [f"warning: the camera is {ground - z:.1f} yards under the ground (at ({x:.0f}, {y:.0f}) the "
                f"ground is at {ground:.1f}): give a Z above it, or X,Y alone to stand at eye height"]
    return []


def grassiest_heading(scene, x: float, y: float, radius: float = 60.0, bins: int = 16) -> float:
    """Yaw (radians) towards the most resident grass within ``radius`` of (x, y); 30 deg if none."""
    pts = scene.grass.sample_xy()
    if not len(pts):
        return math.radians(30.0)
    p = pts - (x, y)
    d = np.hypot(p[:, 0], p[:, 1])
    p = p[(d > 3.0) & (d < radius)]
    if not len(p):
        return math.radians(30.0)
    k = np.floor((np.arctan2(p[:, 1], p[:, 0]) % (2 * math.pi)) / (2 * math.pi) * bins).astype(int) % bins
    counts = np.bincount(k, minlength=bins)
    smooth = counts + np.roll(counts, 1) + np.roll(counts, -1)
    return (int(np.argmax(smooth)) + 0.5) * 2 * math.pi / bins


def start_camera(meadow: Meadow, *, camera=None, target=None, eye_height: float = EYE_HEIGHT) -> Camera:
    """``--camera``/``--target`` when given; else at eye height on the flattest ground near the
    meadow's centre, looking along the ground toward where it rises least (not into a hillside)."""
    f = meadow.field
    if camera is not None and len(camera) == 3:
        cam = Camera(position=np.asarray(camera, np.float64))
    else:
        if camera is not None:
            x, y = float(camera[0]), float(camera[1])
        else:
            c = f.world_size / 2
            g = np.linspace(-60.0, 60.0, 13)
            gx, gy = np.meshgrid(c + g, c + g)
            nz = f.normal(gx.ravel(), gy.ravel())[:, 2]
            i = int(np.argmax(nz - 1e-4 * np.hypot(gx.ravel() - c, gy.ravel() - c)))
            x, y = float(gx.ravel()[i]), float(gy.ravel()[i])
        cam = Camera(position=np.array([x, y, meadow.ground_height(x, y) + eye_height]))
    if target is not None:
        cam.look_at(target)
    elif camera is None or len(camera) == 2:
        yaws = np.arange(16) * (2 * math.pi / 16)
        d = np.array([10.0, 25.0, 45.0, 70.0])
        px = cam.position[0] + np.cos(yaws)[:, None] * d
        py = cam.position[1] + np.sin(yaws)[:, None] * d
        rise = (f.sample(px, py) - cam.position[2]).max(axis=1)
        cam.yaw = float(yaws[int(np.argmin(rise))])
        cam.pitch = math.radians(-6.0)
    return cam
