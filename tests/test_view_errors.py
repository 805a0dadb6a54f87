"""``wowgrass view`` on broken data and impossible frame settings: one clear line per problem, the
right exit status, and a frame of what does exist (issue 17). Runs the real command in a subprocess
so what a user sees on stderr (logging included) is what is checked."""

from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pytest

pytestmark = [pytest.mark.gl, pytest.mark.usefixtures("egl")]

SKY = np.array([0.62, 0.74, 0.86]) * 255


def view(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "wowgrass", "view", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout)


def drawn_fraction(path):
    from PIL import Image

    img = np.asarray(Image.open(path).convert("RGB")).astype(float)
    return float((np.abs(img - SKY).sum(axis=-1) > 30).mean())


def _continent(tmp_path, realdata, *, good=True, truncated=True):
    """continent.wdt (687 tiles listed) beside 42_29 (whole) and/or 42_30 (cut short)."""
    root = tmp_path / "Data"
    maps = root / "World" / "Maps" / "continent"
    maps.mkdir(parents=True)
    shutil.copy(realdata / "adt" / "continent.wdt", maps / "continent.wdt")
    adt = (realdata / "adt" / "continent4229.adt").read_bytes()
    if good:
        (maps / "continent_42_29.adt").write_bytes(adt)
    if truncated:
        (maps / "continent_42_30.adt").write_bytes(adt[:300_000])
    dbc = root / "DBFilesClient"
    dbc.mkdir()
    for name in ("GroundEffectTexture.dbc", "GroundEffectDoodad.dbc"):
        shutil.copy(realdata / "dbc" / "3.3.5" / name, dbc / name)
    return root


@pytest.mark.realdata
def test_view_truncated_tile_beside_a_good_one(tmp_path, realdata):
    root = _continent(tmp_path, realdata)
    out = tmp_path / "f.png"
    r = view("--data", root, "--output", out, "--size", "160x90")
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert r.returncode == 2, r.stderr[-3000:]
    problem = [line for line in r.stderr.splitlines() if "42_30" in line or "42, 30" in line]
    assert len(problem) == 1, r.stderr        # one line names the broken tile (and why)
    assert "0x" in problem[0]                 # with the byte offset
    assert r.stderr.rstrip().splitlines()[-1].startswith("error:")
    assert drawn_fraction(out) > 0.3          # the good tile is in the frame


@pytest.mark.realdata
def test_view_only_a_truncated_tile(tmp_path, realdata):
    root = _continent(tmp_path, realdata, good=False)
    r = view("--data", root, "--output", tmp_path / "f.png", "--size", "160x90")
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert r.returncode == 2
    assert len([line for line in r.stderr.splitlines() if "continent_42_30.adt" in line]) == 1, r.stderr


@pytest.mark.parametrize("samples, message", [("3", "power of two"), ("-1", "power of two"),
                                              ("64", "at most")])
def test_view_samples_checked_against_the_context(tmp_path, samples, message):
    r = view("--output", tmp_path / "f.png", "--size", "64x64", "--samples", samples)
    assert r.returncode == 2, r.stderr[-3000:]
    assert "Traceback" not in r.stderr and message in r.stderr and "--samples" in r.stderr


def test_view_size_the_context_cannot_allocate(tmp_path):
    """16384x16384 is within GL_MAX_RENDERBUFFER_SIZE on llvmpipe, but its framebuffer cannot be made."""
    r = view("--output", tmp_path / "f.png", "--size", "16384x16384", "--samples", "4", "--frames", "1",
             "--no-grass", "--no-doodads", timeout=600)
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert r.returncode in (0, 2), r.stderr[-3000:]
    if r.returncode == 2:
        assert "--size" in r.stderr and r.stderr.count("error:") == 1
