"""The sun's shadows can be seen (issue 25): in the sample world's default view and in `make demo`'s
picture (its --camera 60,60), a good share of the frame is darker with shadows than without. The
sun used to stand high behind both cameras: the two pictures were identical, or nearly."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

from wowgrass.cli.main import cli


def _frame(tmp_path, camera, shadows):
    out = tmp_path / f"{camera}-{shadows}.png"
    args = ["view", "--size", "320x180", "--samples", "0", "-o", str(out), "-q"]
    args += ["--camera", camera] if camera else []
    args += [] if shadows else ["--no-shadows"]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    return np.asarray(Image.open(out).convert("RGB")).astype(int)


@pytest.mark.parametrize("camera", [None, "60,60"], ids=["default view", "make demo"])
def test_sun_shadows_are_visible(tmp_path, camera, egl):
    lit, plain = _frame(tmp_path, camera, True), _frame(tmp_path, camera, False)
    darker = (plain - lit).sum(axis=-1) > 24             # about 8 levels in each channel
    lighter = (lit - plain).sum(axis=-1) > 24
    assert darker.mean() > 0.05, darker.mean()           # was 0.1 % (87 of 57,600 pixels)
    assert lighter.mean() < 0.01                         # shadows only darken
    # the shadows fall on the ground, near the camera: the lower half holds most of them
    assert darker[90:].mean() > darker[:90].mean()
