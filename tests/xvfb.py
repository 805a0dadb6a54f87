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


class ViewWindow:
    """``wowgrass view --window`` on ``display`` in ``cwd``, driven with xdotool, its stderr read as
    it comes (the workbench says each result there: saves, screenshots, reloads), so a test waits
    for what it needs to see instead of sleeping a fixed time."""

    def __init__(self, display: str, cwd, args, size=(1280, 720), env=None, timeout=180):
        import re
        import sys
        import threading

        self.display, self.cwd, self.size = display, cwd, size
        self.env = dict(x_env(display), PYTHONFAULTHANDLER="1", **(env or {}))
        cmd = [sys.executable, "-X", "faulthandler", "-m", "wowgrass", "view", "--window", "--size",
               f"{size[0]}x{size[1]}", *args]
        self.proc = subprocess.Popen(cmd, env=self.env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._re = re
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._out: list[str] = []
        self._out_reader = threading.Thread(target=lambda: self._out.append(self.proc.stdout.read()), daemon=True)
        self._out_reader.start()
        out = subprocess.run(["xdotool", "search", "--sync", "--onlyvisible", "--name", "wowgrass"], env=self.env,
                             capture_output=True, text=True, timeout=timeout)
        assert out.returncode == 0, (out.stderr, self.stderr())
        self.wid = out.stdout.split()[0]
        self.shots = 0
        self.wait_line(r"^window: ", timeout)  # the loop runs: the key callbacks are in

    def _read(self):
        for line in self.proc.stderr:
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def stderr(self) -> str:
        with self._cond:
            return "\n".join(self.lines)

    def wait_line(self, pattern: str, timeout: float = 60.0, start: int = 0) -> str:
        """The first stderr line from index ``start`` on matching ``pattern`` (waits for it)."""
        rx = self._re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for line in self.lines[start:]:
                    if rx.search(line):
                        return line
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    raise AssertionError(f"no stderr line matching {pattern!r} in {timeout:g} s "
                                         f"(exit status {self.proc.poll()}):\n" + "\n".join(self.lines[-40:]))
                self._cond.wait(min(left, 0.5))

    def mark(self) -> int:
        """The index of the next stderr line (wait_line(..., start=mark) sees only what comes after)."""
        with self._cond:
            return len(self.lines)

    def xdo(self, *args):
        subprocess.run(["xdotool", *[str(a) for a in args]], env=self.env, check=True, timeout=30)

    def key(self, *keys):
        self.xdo("key", "--window", self.wid, *keys)

    def click(self, x, y, button=1):
        """The cursor to (x, y) and a click there, in one go (as a quick hand: no frame in between)."""
        self.xdo("mousemove", "--window", self.wid, x, y, "click", button)

    def move(self, x, y):
        self.xdo("mousemove", "--window", self.wid, x, y)

    def shot(self, timeout: float = 120.0):
        """F12, waited for: every event sent before it has been handled (the workbench takes input in
        order) and the frame after it is the picture. Returns the PNG's path."""
        from pathlib import Path

        start = self.mark()
        self.key("F12")
        self.shots += 1
        line = self.wait_line(r"screenshot .*wowgrass-shot-\d+\.png", timeout, start)
        return Path(self.cwd) / line.split("screenshot ", 1)[1].strip()

    def finish(self, timeout: float = 120.0, keys=("Escape",)):
        """Esc (or ``keys``) and the exit: (returncode, stdout, stderr)."""
        if self.proc.poll() is None and keys:
            self.key(*keys)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(10)
        self._out_reader.join(10)
        return self.proc.returncode, "".join(self._out), self.stderr()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
