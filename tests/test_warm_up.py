"""No cold-start hitch (Viewer.warm_up): every program the viewer can use is compiled (and drawn
once) before the first frame, so that a flight over the sample world (the lake and the house
streaming in, shadows toggled, far tiles) compiles nothing in a frame."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gl


def test_warm_up_compiles_every_program_before_the_first_frame(egl):
    from wowgrass.render.app import (CameraOptions, OutputMode, OutputOptions, ViewOptions, open_scene, open_source,
                                     open_target, open_viewer)
    from wowgrass.render.gl.programs import compile_log

    # from the sample's south-west corner, looking across it
    opts = ViewOptions(camera=CameraOptions((330.0, 330.0, 110.0), (600.0, 600.0, 60.0)), output=OutputOptions(size=(96, 54), warm_up=False))
    data, src = open_source(opts.data)
    target, _ = open_target(opts.output, OutputMode(False, None), lambda s: None, "test")
    scene = open_scene(target, src, opts.look, lambda s: None)
    try:
        viewer = open_viewer(target, scene, src, opts, OutputMode(False, None))
        viewer.light.shadow_size = 256          # llvmpipe: a small sun's map
        log = compile_log(target.ctx)
        at_start = len(log)
        done = viewer.warm_up(lines=False)
        warmed = list(log)
        assert done["programs_compiled"] == len(warmed) - at_start > 0 and done["draws"] > 0
        names = {fname for fname, _defines in warmed}
        # what a frame may draw: terrain (near, far), liquids, WMOs, doodads, grass, their shadows
        assert {"terrain.glsl", "liquid.glsl", "wmo.glsl", "doodad.glsl", "grass.glsl"} <= names
        variants = {(f, dict(d).get("SHADOW_PASS", False), dict(d).get("FAR_TILE", False)) for f, d in warmed}
        assert ("terrain.glsl", True, True) in variants and ("wmo.glsl", True, False) in variants
        # frames over the lake and the house, shadows on and off, the camera moving: nothing new
        assert viewer.shadow_map is not None     # the warm-up's whole frame made the sun's map
        cam = viewer.camera
        for i in range(6):
            cam.position = cam.position - np.array([40.0, 40.0, 0.0])
            scene.update(cam.position)
            viewer.toggles.shadows = i % 2 == 0
            viewer.render_frame(i / 60.0)
        assert scene.liquids.index_count > 0 and scene.wmos.placement_count > 0
        assert log == warmed, log[len(warmed):]
        viewer.release()
    finally:
        scene.release()
        target.release()
        data.close()
