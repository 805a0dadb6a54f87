"""``wowgrass view`` in a real glfw window on a private Xvfb server (Mesa GLX behind it).

The window tests start their own ``Xvfb`` on a free display number (``-displayfd``) and run the
command in a subprocess; they are skipped only when the ``Xvfb`` binary is not installed
(Debian: ``apt-get install xvfb xdotool``). The key test drives the window with ``xdotool``;
where that is missing, :func:`test_window_controls_handlers` still calls the key handlers
directly on a real (hidden) glfw window.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from xvfb import private_xvfb, x_env
from click.testing import CliRunner

from conftest import require_tool
from wowgrass.cli.main import cli

pytestmark = pytest.mark.window

STATS_LINE = re.compile(r"cpu +[\d.]+ ms +gpu +(?:[\d.]+|n/a) ms +draws +\d+ +instances +[\d,]+ +triangles +[\d,]+")
SIZE = (320, 240)
CAMERA = "60,60"


@pytest.fixture(scope="module")
def xdisplay():
    """A private Xvfb server (screen = the window's size, so the pointer starts inside the window)."""
    xvfb = require_tool("Xvfb", "no X server for the window tests (apt-get install xvfb xdotool)")
    with private_xvfb(xvfb, SIZE) as display:
        yield display


def _env(display):
    return x_env(display)


def _view(display, *args):
    # the view alone (the workbench's panels: tests/test_workbench_window.py)
    return [sys.executable, "-m", "wowgrass", "view", "--window", "--size", f"{SIZE[0]}x{SIZE[1]}",
            "--camera", CAMERA, "--stats", "--json", "--no-panels", *args]


def _png(path):
    from PIL import Image

    return np.asarray(Image.open(path).convert("RGB")).astype(int)


def _offscreen(tmp_path, *flags):
    out = tmp_path / ("off" + "".join(flags).replace("-", "_") + ".png")
    r = CliRunner().invoke(cli, ["view", "--output", str(out), "--size", f"{SIZE[0]}x{SIZE[1]}",
                                 "--camera", CAMERA, *flags])
    if r.exit_code != 0 and "EGL" in r.output:
        require_tool("an EGL OpenGL context", f"the offscreen reference frame: {r.output.strip()}", found=False)
    assert r.exit_code == 0, r.output
    return _png(out)


def _differs(a, b):
    """Fraction of pixels that differ visibly."""
    return float((np.abs(a - b).sum(axis=-1) > 40).mean())


def test_window_frames_screenshot_shows_grass(xdisplay, tmp_path):
    shot = tmp_path / "window.png"
    p = subprocess.run(_view(xdisplay, "--frames", "4", "--screenshot", str(shot)), env=_env(xdisplay),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    res = json.loads(p.stdout)
    assert res["window"] is True and res["frame_count"] == 4 and res["size"] == list(SIZE)
    assert res["screenshot"] == str(shot.resolve())
    assert STATS_LINE.search(p.stderr), p.stderr  # r_stats on: the console line
    assert STATS_LINE.match(res["stats_line"])
    assert res["frame"]["grass_instance_count"] > 0 and res["toggles"]["grass"] is True
    img = _png(shot)  # read back from the window's default framebuffer
    assert img.shape == (SIZE[1], SIZE[0], 3)
    # the window shows the renderer's frame: close to the offscreen one of the same view (the
    # wind phase differs: window time runs on the clock), far from the same view without grass
    with_grass, without = _offscreen(tmp_path), _offscreen(tmp_path, "--no-grass")
    assert _differs(img, without) > 0.1  # grass covers ~18% of this view
    assert _differs(img, with_grass) < _differs(img, without) / 2


def test_window_key_toggles_grass_and_escape_quits(xdisplay, tmp_path):
    xdotool = require_tool("xdotool", "no key presses into the window (test_window_controls_handlers calls the "
                                      "key handlers instead)")
    shot = tmp_path / "nograss.png"
    proc = subprocess.Popen(_view(xdisplay, "--quit-after", "60", "--screenshot", str(shot)), env=_env(xdisplay),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # the title carries the stats line once the first frame is shown (the key callbacks are in)
        found = subprocess.run([xdotool, "search", "--sync", "--name", "wowgrass .*cpu"], env=_env(xdisplay),
                               capture_output=True, text=True, timeout=40)
        wid = found.stdout.split()[0]
        for key in ("g", "Escape"):  # frames keep coming until Esc; the last one is drawn after G
            subprocess.run([xdotool, "windowfocus", "--sync", wid, "key", key], env=_env(xdisplay),
                           check=True, timeout=10)
        out, err = proc.communicate(timeout=40)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    res = json.loads(out)
    assert res["toggles"]["grass"] is False  # G toggled r_grass
    assert res["seconds"] < 55  # Esc ended it, not --quit-after
    assert res["frame"]["grass_instance_count"] == 0
    assert STATS_LINE.search(err), err
    img = _png(shot)
    without = _offscreen(tmp_path, "--no-grass")
    assert _differs(img, without) < 0.02  # terrain and doodads only: the same picture


def test_window_controls_handlers(xdisplay, monkeypatch):
    """The handlers themselves, on a hidden window (no GL needed): toggles, flying, speed, look, Esc."""
    import glfw

    from wowgrass.render.camera import Camera
    from wowgrass.render.viewer import Toggles
    from wowgrass.render.window import WindowControls

    monkeypatch.setenv("DISPLAY", xdisplay)
    assert glfw.init()
    try:
        glfw.default_window_hints()
        glfw.window_hint(glfw.CLIENT_API, glfw.NO_API)
        glfw.window_hint(glfw.VISIBLE, False)
        win = glfw.create_window(64, 64, "controls", None, None)
        assert win

        class Scene:
            @staticmethod
            def ground_height(x, y):
                return 10.0

        class FakeViewer:
            toggles = Toggles()
            camera = Camera(position=np.array([0.0, 0.0, 12.0]), yaw=0.0, pitch=0.0)
            scene = Scene()

        v = FakeViewer()
        c = WindowControls(v, glfw, win, speed=10.0)
        press = lambda k: c.on_key(win, k, 0, glfw.PRESS, 0)  # noqa: E731
        release = lambda k: c.on_key(win, k, 0, glfw.RELEASE, 0)  # noqa: E731
        for key, name in ((glfw.KEY_G, "grass"), (glfw.KEY_O, "doodads"), (glfw.KEY_T, "terrain"),
                          (glfw.KEY_F3, "stats"), (glfw.KEY_C, "cull"), (glfw.KEY_L, "lod_colors"),
                          (glfw.KEY_M, "mcsh")):
            before = getattr(v.toggles, name)
            press(key)
            release(key)
            assert getattr(v.toggles, name) is (not before), name
        press(glfw.KEY_W)
        c.step(0.5)  # yaw 0 looks north (+X): 10 units/s for half a second
        assert np.allclose(v.camera.position, [5.0, 0.0, 12.0])
        press(glfw.KEY_LEFT_SHIFT)
        c.step(0.5)
        assert np.allclose(v.camera.position, [35.0, 0.0, 12.0])  # 6x
        release(glfw.KEY_LEFT_SHIFT)
        release(glfw.KEY_W)
        c.step(0.5)
        assert np.allclose(v.camera.position, [35.0, 0.0, 12.0])  # nothing held: no motion
        press(glfw.KEY_Q)
        c.step(10.0)
        assert v.camera.position[2] == pytest.approx(10.0 + WindowControls.MIN_CLEARANCE)  # not into the ground
        release(glfw.KEY_Q)
        c.on_button(win, glfw.MOUSE_BUTTON_RIGHT, glfw.PRESS, 0)
        c.on_cursor(win, 100.0, 100.0)
        c.on_cursor(win, 150.0, 100.0)  # drag right: turn right (yaw decreases towards east)
        c.on_button(win, glfw.MOUSE_BUTTON_RIGHT, glfw.RELEASE, 0)
        assert v.camera.yaw == pytest.approx(2 * np.pi - 50 * WindowControls.LOOK_RADIANS_PER_PIXEL)
        c.on_cursor(win, 300.0, 100.0)  # button up: no look
        assert v.camera.yaw == pytest.approx(2 * np.pi - 50 * WindowControls.LOOK_RADIANS_PER_PIXEL)
        c.on_scroll(win, 0.0, 1.0)
        assert c.speed == pytest.approx(12.5)
        steps = []
        v.zone_light = type("Clock", (), {"step": lambda self, n: steps.append(n)})()
        press(glfw.KEY_RIGHT_BRACKET)
        press(glfw.KEY_LEFT_BRACKET)
        assert steps == [120, -120]  # the light tables' hour, an hour on and back (view --clock)
        press(glfw.KEY_W)
        c.on_focus(win, False)  # focus lost: held keys are dropped
        assert not c.keys_down
        assert not glfw.window_should_close(win)
        press(glfw.KEY_ESCAPE)
        assert glfw.window_should_close(win)
        glfw.destroy_window(win)
    finally:
        glfw.terminate()


def test_window_without_display_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    for args in (["--window"], ["--screenshot", str(tmp_path / "s.png")], ["--quit-after", "2"]):
        r = CliRunner().invoke(cli, ["view", *args])
        assert r.exit_code == 2, r.output
        assert "error:" in r.output and "--output" in r.output and "Traceback" not in r.output


def test_window_unreachable_display(monkeypatch, tmp_path):
    """A DISPLAY nobody serves: forced --window fails with exit 2; the default falls back to offscreen."""
    monkeypatch.setenv("DISPLAY", ":187")  # no X server there
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    r = CliRunner().invoke(cli, ["view", "--window", "--size", "64x48"])
    assert r.exit_code == 2, r.output
    assert "error: cannot open a window on :187" in r.output and "--output" in r.output
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["view", "--size", "64x48"])
    if r.exit_code != 0 and "EGL" in r.output:
        require_tool("an EGL OpenGL context", f"the offscreen fallback: {r.output.strip()}", found=False)
    assert r.exit_code == 0, r.output
    assert "rendering offscreen to view.png" in r.output and (tmp_path / "view.png").exists()


def test_window_option_conflicts(monkeypatch):
    monkeypatch.setenv("DISPLAY", ":187")
    r = CliRunner().invoke(cli, ["view", "--window", "--output", "x.png"])
    assert r.exit_code == 2 and "--screenshot" in r.output
    r = CliRunner().invoke(cli, ["view", "--offscreen", "--quit-after", "3"])
    assert r.exit_code == 2 and "for the window" in r.output
    r = CliRunner().invoke(cli, ["view", "--window", "--quit-after", "0"])
    assert r.exit_code == 2 and "--quit-after" in r.output


def test_doctor_on_a_display_reports_every_check(xdisplay):
    """On a display, ``doctor`` checks an EGL context and a window: a GLX context after the EGL one
    in a single process ends it with an X error under Mesa, so the window is probed in a process
    of its own and the report reaches its last line."""
    r = subprocess.run([sys.executable, "-m", "wowgrass", "doctor", "--no-tiles", "--json"], env=_env(xdisplay),
                       capture_output=True, text=True, timeout=300)
    assert "X Error" not in r.stderr, r.stderr
    report = json.loads(r.stdout)
    checks = {c["check"]: c for c in report["checks"]}
    assert {"python", "gl-egl", "gl-window", "data", "cache", "stormlib"} <= set(checks)
    assert checks["gl-window"]["ok"], checks["gl-window"]
    assert checks["gl-window"]["detail"].startswith("window on :")


def test_doctor_reports_a_display_that_gives_no_window(tmp_path):
    """A display that cannot be opened: the window check fails with what the probe said, a
    note (EGL still renders offscreen), and the report goes on."""
    env = {k: v for k, v in os.environ.items() if k not in ("WAYLAND_DISPLAY",)}
    env["DISPLAY"] = ":59999"
    r = subprocess.run([sys.executable, "-m", "wowgrass", "doctor", "--no-tiles", "--json"], env=env,
                       capture_output=True, text=True, timeout=300)
    report = json.loads(r.stdout)
    checks = {c["check"]: c for c in report["checks"]}
    w = checks["gl-window"]
    assert not w["ok"] and ":59999" in w["detail"] and "xvfb-run" in w["fix"]
    assert "stormlib" in checks
