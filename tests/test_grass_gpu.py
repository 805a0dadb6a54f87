"""GPU-driven grass culling and LOD rings on llvmpipe, against the numpy reference."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytestmark = pytest.mark.gl

from wowgrass.render.constants import DRAW_DISTANCE, TILE_SIZE, GrassSettings, RingSettings  # noqa: E402
from wowgrass.render.world.synthetic import random_instances, tile_origin  # noqa: E402

COL, ROW = 32, 32
X0, Y0 = tile_origin(COL, ROW)
CX, CY = X0 - TILE_SIZE / 2, Y0 - TILE_SIZE / 2
DEBUG_PNG = __import__("os").environ.get("WOWGRASS_TEST_PNG")  # folder to keep test frames in
MODELS = ("synthetic\\grass0.m2", "synthetic\\grass1.m2")


@pytest.fixture(scope="module")
def ctx(ctx):
    if ctx.version_code < 430:
        pytest.skip("no OpenGL 4.3 (compute shaders)")
    return ctx


def field(n=6000, seed=1, half=240.0):
    """Two models' instances scattered over a square around the tile centre (more than the draw
    distance across, so the distance, ring and frustum tests all have work)."""
    inst = random_instances(n, (CX - half, CY - half), (CX + half, CY + half), seed=seed, scale=(0.6, 1.6))
    inst["pos"][:, 2] = np.sin(inst["pos"][:, 0] / 30.0) * 3.0
    return {MODELS[0]: inst[0::2], MODELS[1]: inst[1::2]}


class Rig:
    """A GpuGrass over given instances, drawn by draw_frame into a small offscreen target."""

    def __init__(self, ctx, instances, *, settings=None, size=(192, 108), samples=0, budget=8 << 20):
        from wowgrass.render.gl.context import create_offscreen_target
        from wowgrass.render.frame import FrameUniforms
        from wowgrass.render.sources.grass_gpu import GpuGrass
        from wowgrass.render.gl.meshes import GpuMesh, crossed_quads
        from wowgrass.render.passes import ColourPass
        from wowgrass.render.gl.programs import make_programs

        self.ctx = ctx
        self.target = create_offscreen_target(size, samples=samples, ctx=ctx)
        self.programs = make_programs(ctx)
        self.grass = GpuGrass(ctx, self.programs, settings or GrassSettings(), upload_budget=budget)
        self.grass.collect_stats = True
        self.meshes = [GpuMesh(ctx, crossed_quads(width=0.9 + 0.3 * k, height=0.6 + 0.2 * k)) for k in range(2)]
        self.instances = {}
        for k, name in enumerate(MODELS):
            if name in instances:
                self.grass.add(self.meshes[k], instances[name], tile=(COL, ROW))
                self.instances[k] = instances[name]
        self.uniforms = FrameUniforms(ctx)
        self.passes = [ColourPass(self.target)]

    def frame(self, camera, t=0.0):
        from wowgrass.render.frame import Frame, draw_frame
        from wowgrass.render.views import View

        view = View(camera, (0, 0, *self.target.size))
        fr = Frame(time=t, views=[view], wind=self.grass.settings)
        draw_frame(fr, self.passes, [self.grass], self.uniforms)
        return view

    def reference(self, view):
        from wowgrass.render.sources.rings import reference_cull

        s = self.grass.settings
        out = {}
        for k, inst in self.instances.items():
            mesh = self.meshes[k]
            keep, lod = reference_cull(inst, camera_xy=view.camera.position[:2], planes=view.planes(),
                                       draw_distance=s.draw_distance, bound_z=mesh.bound_z,
                                       bound_radius=mesh.bound_radius, rings=s.rings)
            for lv in (0, 1):
                out[(k, lv)] = inst[keep & (lod == lv)]
        return out

    def release(self):
        self.grass.release()
        for m in self.meshes:
            m.release()
        self.uniforms.release()
        self.target.release()


def as_set(inst):
    return set(map(bytes, np.ascontiguousarray(inst).view(np.dtype((np.void, 16)))))


def eye_camera(x, y, z, yaw_deg, pitch_deg=-8.0, fov=60.0):
    from wowgrass.render.camera import Camera

    cam = Camera(position=np.array([x, y, z]), fov_y=fov)
    cam.yaw, cam.pitch = math.radians(yaw_deg), math.radians(pitch_deg)
    cam.far = 1000.0
    return cam


CAMERAS = [
    (CX, CY, 1.7, 20.0, -8.0),  # eye height, rings and frustum both cut
    (CX + 100.0, CY - 60.0, 12.0, 200.0, -20.0),  # off-centre, looking back across the field
    (CX, CY, 300.0, 0.0, -89.0),  # from high above: nearly everything is in the frustum
]


@pytest.mark.parametrize("cam", CAMERAS, ids=["eye", "offcentre", "above"])
def test_gpu_visible_set_equals_the_cpu_reference(ctx, cam):
    rig = Rig(ctx, field())
    view = rig.frame(eye_camera(*cam))
    got = rig.grass.read_visible(view)
    want = rig.reference(view)
    total = 0
    for key, inst in want.items():
        assert len(got[key]) == len(inst), key
        assert as_set(got[key]) == as_set(inst), key
        total += len(inst)
    st = rig.grass.read_stats(view)
    assert st["drawn"] == total and st["overflow"] == 0
    assert sum(st["kept_per_ring"]) == total
    assert 0 < total < sum(len(v) for v in rig.instances.values())  # something culled, something kept
    if cam[2] < 100:  # from the eye, every ring has kept instances and the lighter mesh is used
        assert all(k > 0 for k in st["kept_per_ring"]) and len(want[(0, 1)]) > 0
    rig.release()


def test_ring_membership_is_nested(ctx):
    """The same patch of instances seen from each ring's distance: what ring k keeps, ring k-1 keeps."""
    rings = RingSettings(enabled=True)
    patch = random_instances(3000, (CX - 4, CY - 4), (CX + 4, CY + 4), seed=7)
    rig = Rig(ctx, {MODELS[0]: patch}, settings=GrassSettings(rings=rings))
    kept = []
    # from the middle of ring 0, 1, 2, 3 (a patch 8 units across stays inside one ring)
    mids = [rings.radii[0] / 2] + [(a + b) / 2 for a, b in zip(rings.radii, [*rings.radii[1:], DRAW_DISTANCE])]
    for d in mids:
        view = rig.frame(eye_camera(CX - d, CY, 300.0, 0.0, -math.degrees(math.atan2(300.0, d)), fov=30.0))
        got = rig.grass.read_visible(view)
        kept.append(as_set(np.concatenate([got[(0, 0)], got[(0, 1)]])))
    assert len(kept[0]) == len(patch)
    for k in range(1, len(kept)):
        assert kept[k] <= kept[k - 1], f"ring {k} keeps instances ring {k - 1} drops"
        assert len(kept[k]) < len(kept[k - 1])
        frac = len(kept[k]) / len(patch)
        assert abs(frac - rings.keep[k - 1]) < 0.05, (k, frac)  # the hash is uniform
    rig.release()


def test_small_camera_step_changes_the_kept_set_only_near_ring_edges(ctx):
    settings = GrassSettings(rings=RingSettings(enabled=True))
    rig = Rig(ctx, field(n=8000, half=230.0), settings=settings)
    step = 0.5
    sets = []
    for dx in (0.0, step):
        # from high above with a wide lens: the frustum holds everything within the draw distance,
        # so only the distance tests (ring edges, draw distance) can change the set
        view = rig.frame(eye_camera(CX + dx, CY, 400.0, 0.0, -89.9, fov=100.0))
        got = rig.grass.read_visible(view)
        sets.append(as_set(np.concatenate([got[(0, 0)], got[(0, 1)], got[(1, 0)], got[(1, 1)]])))
    changed = sets[0] ^ sets[1]
    assert changed, "a step across the field changed nothing (the test would prove nothing)"
    assert len(changed) < 0.05 * len(sets[0])
    raw = np.frombuffer(b"".join(changed), np.dtype([("pos", "<f4", 3), ("ys", "<u4")]))
    edges = np.array([*settings.rings.radii, settings.draw_distance])
    d0 = np.hypot(raw["pos"][:, 0] - CX, raw["pos"][:, 1] - CY)
    d1 = np.hypot(raw["pos"][:, 0] - CX - step, raw["pos"][:, 1] - CY)
    # an instance whose set membership changed crossed an edge: it lies between d0 and d1 of one
    crossed = ((np.minimum(d0, d1)[:, None] - 1e-3 <= edges[None]) & (edges[None] <= np.maximum(d0, d1)[:, None] + 1e-3))
    assert crossed.any(axis=1).all(), "an instance away from every ring edge changed"
    rig.release()


def test_culling_off_looks_the_same_at_the_centre(ctx):
    """Culling off draws every resident instance straight from the arena (the vertex stage still
    applies the draw distance and the rings' dissolve); on, the compute pass's compacted set. The
    near field (ring 0: everything kept, full meshes) must match: only the order of instances in
    the compacted buffer differs, which changes a pixel only where two blades meet at exactly the
    same depth, so 0.5% of the centre's pixels is a generous bound. Farther out the outer ring's
    lighter mesh is drawn only with culling on, so the rest of the frame may differ more."""
    rig = Rig(ctx, field(n=24000, half=150.0), size=(256, 144))
    cam = eye_camera(CX, CY, 1.7 + 3.0 * math.sin(CX / 30.0), 20.0, -8.0)
    rig.grass.cull = True
    rig.frame(cam)
    on = rig.target.read_rgba()
    rig.grass.cull = False
    rig.frame(cam)
    off = rig.target.read_rgba()
    if DEBUG_PNG:
        from PIL import Image
        Image.fromarray(on).save(f"{DEBUG_PNG}/cull_on.png")
        Image.fromarray(off).save(f"{DEBUG_PNG}/cull_off.png")
    h, w = on.shape[:2]
    centre = (slice(h // 2, h), slice(w // 4, 3 * w // 4))  # the lower middle: the nearest grass
    sky = np.array([0.62, 0.74, 0.86]) * 255
    assert (np.abs(on[centre][..., :3] - sky).sum(-1) > 30).mean() > 0.1, "no grass at the centre"
    diff = np.abs(on.astype(int) - off.astype(int)).sum(-1) > 24
    assert diff[centre].mean() < 0.005
    assert diff.mean() < 0.05
    rig.release()


def test_uploads_spread_over_frames_and_ranges_are_reused(ctx):
    inst = field(n=4000)
    rig = Rig(ctx, {}, budget=16 * 1000)  # 1000 instances a frame
    g = rig.grass
    g.add(rig.meshes[0], inst[MODELS[0]], tile=(1, 1))
    rig.instances[0] = inst[MODELS[0]]
    cam = eye_camera(CX, CY, 300.0, 0.0, -89.0)
    frames = 0
    while g.pending_uploads:
        view = rig.frame(cam)
        frames += 1
        if g.pending_uploads:  # groups are published only once the whole batch is there
            assert g.read_stats(view)["drawn"] == 0
    assert frames == 2  # 2000 instances at 1000 a frame
    view = rig.frame(cam)
    assert as_set(np.concatenate(list(rig.grass.read_visible(view).values()))) == \
        as_set(np.concatenate(list(rig.reference(view).values())))
    arena_size = g.arena.size
    g.remove_tile((1, 1))
    g.add(rig.meshes[0], inst[MODELS[0]], tile=(1, 2))  # freed range not reusable yet: placed after it
    first = g.batches[0].start
    assert first >= 2000
    g.flush_uploads()
    for _ in range(5):
        rig.frame(cam)
    g.remove_tile((1, 2))
    g.add(rig.meshes[0], inst[MODELS[0]], tile=(1, 3))  # the first range is free again: reused
    assert g.batches[0].start == 0
    assert g.arena.size == arena_size
    rig.release()


def test_per_frame_gl_calls_do_not_grow_with_resident_tiles_or_views(ctx):
    """The frame's GL calls (dispatches, barriers, binds, draws) are the same for 1 resident tile
    as for 40, and for one view as for a split screen's two (one dispatch culls every view): the
    dispatch covers the group table whatever it holds, the draws are per model and view. A frame
    like the last one binds nothing again (render.glstate)."""
    import moderngl

    from wowgrass.render.frame import Frame, draw_frame
    from wowgrass.render.gl import native
    from wowgrass.render.views import frame_views

    calls = {}

    def counting(cls, name):
        real = getattr(cls, name)

        def wrapper(self, *a, **k):
            calls[name] = calls.get(name, 0) + 1
            return real(self, *a, **k)
        return real, wrapper

    inst = field(n=4000)[MODELS[0]]
    per_frame = {}
    for tiles, split in ((1, False), (40, False), (40, True)):
        rig = Rig(ctx, {})
        for t in range(tiles):
            rig.grass.add(rig.meshes[0], inst, tile=(t, 0))
        rig.grass.flush_uploads()
        cam = eye_camera(CX, CY, 1.7, 20.0)
        views = frame_views(cam, rig.target.size, split=split)

        def frame(t):
            draw_frame(Frame(time=t, views=views, wind=rig.grass.settings), rig.passes, [rig.grass], rig.uniforms)

        frame(0.0)  # the first frame lays out the commands
        frame(0.0)
        patched = [(native, "run_compute"), (moderngl.Buffer, "bind_to_storage_buffer"),
                   (moderngl.VertexArray, "render_indirect"), (moderngl.Context, "memory_barrier")]
        saved = []
        for cls, name in patched:
            real, wrapper = counting(cls, name)
            saved.append((cls, name, real))
            setattr(cls, name, wrapper)
        try:
            calls.clear()
            frame(0.0)  # the same frame again: its frame block is not rewritten
            per_frame[(tiles, split, "same")] = dict(calls)
            calls.clear()
            frame(0.5)  # a new frame block: that buffer of the ring is bound for the compute pass
            per_frame[(tiles, split, "next")] = dict(calls)
        finally:
            for cls, name, real in saved:
                setattr(cls, name, real)
        for v in views:
            assert rig.grass.read_stats(v)["drawn"] > 0
        rig.release()
    for (tiles, split, kind), c in per_frame.items():
        want = {"run_compute": 1, "memory_barrier": 1, "render_indirect": 2 if split else 1}  # one cull for all views
        if kind == "next":
            want["bind_to_storage_buffer"] = 1
        assert c == want, (tiles, split, kind, c)


def test_visible_set_stays_exact_frame_after_frame(ctx):
    """Frames use the two command sets in turn, each dispatch zeroing the other for the next: over
    a run of frames (cameras changing, a frame without culling, a split screen's two views then
    one) every culled frame's visible set is still exactly the reference's, nothing left over
    from an earlier frame in the counts."""
    from wowgrass.render.frame import Frame, draw_frame
    from wowgrass.render.views import frame_views

    rig = Rig(ctx, field(n=4000))
    cams = [eye_camera(*CAMERAS[0]), eye_camera(*CAMERAS[1]), eye_camera(CX - 30.0, CY + 10.0, 2.0, 110.0)]
    script = [(0, False, True), (1, False, True), (1, False, True), (2, False, False), (0, False, True),
              (1, True, True), (2, True, True), (0, False, True), (0, False, True)]
    for k, (c, split, cull) in enumerate(script):
        rig.grass.cull = cull
        views = frame_views(cams[c], rig.target.size, split=split)
        draw_frame(Frame(time=0.1 * k, views=views, wind=rig.grass.settings), rig.passes, [rig.grass], rig.uniforms)
        if not cull:
            continue
        for view in views:
            got, want = rig.grass.read_visible(view), rig.reference(view)
            for key, inst in want.items():
                assert as_set(got[key]) == as_set(inst) and len(got[key]) == len(inst), (k, view.name, key)
            st = rig.grass.read_stats(view)
            assert st["drawn"] == sum(len(v) for v in want.values()) and st["overflow"] == 0, (k, st)
            assert sum(st["kept_per_ring"]) == st["drawn"], (k, st)
    rig.release()


def test_overflow_is_clamped_and_counted(ctx):
    """More visible instances than a region holds: the command draws the region's capacity, and the
    statistics count what did not fit."""
    rig = Rig(ctx, field(n=3000))
    rig.grass.max_visible = 64  # before the first frame, in which the batches' uploads complete
    view = rig.frame(eye_camera(*CAMERAS[2]))  # from above: nearly everything visible
    st = rig.grass.read_stats(view)
    got = rig.grass.read_visible(view)
    assert st["overflow"] > 0
    assert all(len(v) <= 64 for v in got.values())
    assert st["drawn"] == sum(len(v) for v in got.values())
    assert st["drawn"] + st["overflow"] == sum(st["kept_per_ring"])
    rig.release()


def test_compacted_buffer_holds_nearer_bands_first(ctx):
    """Culled in distance bands (NEAR_FIRST_BANDS), nearest first: in each draw's compacted instances no
    instance of a farther band (by its chunk group's box) comes before one of a nearer band, and
    the visible set is the same as culled in one dispatch (arbitrary order)."""
    from wowgrass.render.sources.grass_gpu import NEAR_FIRST_BANDS

    rig = Rig(ctx, field(n=8000))
    cam = eye_camera(CX + 5.0, CY - 3.0, 1.7, 35.0)
    g = rig.grass
    g.bands = NEAR_FIRST_BANDS
    view = rig.frame(cam)  # uploads the instances
    # each resident instance's band, from its group's box (what the shader tests)
    band_of = {}
    lows = np.array([lo for lo, _ in NEAR_FIRST_BANDS], np.float64)
    for b in g.batches:
        inst = np.frombuffer(g.arena.read(b.count * 16, offset=b.start * 16), np.dtype((np.void, 16)))
        for grp in b.groups:
            first, count = int(grp["info"][0]) - b.start, int(grp["info"][1])
            gap = np.maximum(np.maximum(grp["lo"][:2] - cam.position[:2], cam.position[:2] - grp["hi"][:2]), 0.0)
            band = int(np.searchsorted(lows, float(np.hypot(*gap)), side="right")) - 1
            for raw in inst[first:first + count]:
                band_of[bytes(raw)] = band
    ordered = g.read_visible(view)
    seen_bands = set()
    for key, inst in ordered.items():
        bands = [band_of[bytes(r)] for r in np.ascontiguousarray(inst).view(np.dtype((np.void, 16)))]
        assert bands == sorted(bands), key
        seen_bands.update(bands)
    assert len(seen_bands) >= 2  # the camera sees grass of more than one band
    g.bands = ()
    unordered = g.read_visible(rig.frame(cam))
    for key in ordered:
        assert as_set(ordered[key]) == as_set(unordered[key])
    rig.release()


def test_culling_off_draws_after_the_arena_grew(ctx):
    """Culling off draws straight from the arena: once the arena grows (an edit's grass added:
    a bigger buffer, the old one released) the draw must use the new buffer. The vertex arrays
    were dropped but their caches kept the old, released buffer: the next draw raised "must be a
    Buffer not InvalidObject" (the window soak, issue 49 item 4: C, then an edit)."""
    rig = Rig(ctx, field(n=24000, half=150.0), size=(256, 144))
    g = rig.grass
    g.cull = False
    cam = eye_camera(CX, CY, 1.7 + 3.0 * math.sin(CX / 30.0), 20.0, -8.0)
    rig.frame(cam)
    before_img = rig.target.read_rgba()
    sky = np.array([0.62, 0.74, 0.86]) * 255
    assert (np.abs(before_img[..., :3] - sky).sum(-1) > 30).mean() > 0.1, "no grass drawn"
    before = g.arena
    g.reserve(g.arena.size, 0)  # room for more than the arena holds (an edit's tiles): it grows
    assert g.arena is not before  # a new buffer, the old one released
    rig.frame(cam)  # drew from the released one before the fix
    after_img = rig.target.read_rgba()
    assert (np.abs(after_img.astype(int) - before_img.astype(int)).sum(-1) > 24).mean() < 0.005  # the same grass
    rig.release()
