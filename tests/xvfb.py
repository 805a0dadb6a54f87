"""A private Xvfb server for the window tests (tests/test_window.py, tests/test_workbench_window.py)."""

from __future__ import annotations

import os
import subprocess
import time
from contextlib import contextmanager


@contextmanager
def private_xvfb(xvfb: str, size: tuple[int, int]):
    """Start ``xvfb`` on a free display number (``-displayfd``) with a screen of ``size`` (the
    window's, so the pointer starts inside it); yields ":N" and stops the server after."""
    r, w = os.pipe()
    proc = subprocess.Popen([xvfb, "-displayfd", str(w), "-screen", "0", f"{size[0]}x{size[1]}x24", "-nolisten", "tcp"],
                            pass_fds=(w,), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    os.close(w)
    try:
        buf = b""
        deadline = time.monotonic() + 15
        while not buf.endswith(b"\n") and time.monotonic() < deadline:
            chunk = os.read(r, 16)
            if not chunk:
                break
            buf += chunk
        os.close(r)
        assert buf.strip().isdigit(), f"Xvfb did not report a display: {proc.stderr.read1(4000) if proc.poll() is not None else buf!r}"
        yield f":{int(buf)}"
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()


def x_env(display: str) -> dict:
    """The environment of a process on ``display`` (no Wayland)."""
    env = dict(os.environ, DISPLAY=display)
    env.pop("WAYLAND_DISPLAY", None)
    return env
