"""Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: JSON
messages separated by NUL bytes on file descriptors 3 and 4), so no websocket library is needed.

Used by the web export's browser test and its benchmark: open a page, collect console errors and
uncaught exceptions, wait for a page-side flag, evaluate expressions, take screenshots.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def find_browser() -> str | None:
    env = os.environ.get("WOWGRASS_CHROMIUM")
    if env:
        return env if Path(env).exists() else shutil.which(env)
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


class BrowserGone(RuntimeError):
    """The browser process went away (or never answered) while being started or driven."""


class Chromium:
    """One headless browser with one page target (a flattened session)."""

    def __init__(self, binary: str, *, size=(1280, 720), gl: str = "swiftshader", attempts: int = 3):
        self.size = size
        for attempt in range(attempts):   # a browser that dies while starting (a loaded machine) is started again
            try:
                self._start(binary, size, gl)
                return
            except BrowserGone as e:
                self.close()
                if attempt == attempts - 1:
                    raise RuntimeError(f"Chromium did not start ({attempts} tries): {e}") from None

    def _start(self, binary, size, gl):
        self.profile = tempfile.mkdtemp(prefix="wowgrass-chromium-")
        r_cmd, w_cmd = os.pipe()   # we write commands -> its fd 3
        r_evt, w_evt = os.pipe()   # it writes replies and events -> our read end
        args = [binary, "--headless=new", "--remote-debugging-pipe", f"--user-data-dir={self.profile}",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--mute-audio",
                "--enable-unsafe-swiftshader", f"--use-angle={gl}", "--ignore-gpu-blocklist",
                f"--window-size={size[0]},{size[1]}", "--hide-scrollbars", "--no-sandbox",
                "--disable-dev-shm-usage", "about:blank"]

        # The pipe ends reach the shell as its stdin/stdout and go onto the descriptors the browser expects
        # by redirects: no preexec_fn (unsafe in a process with threads, and earlier browsers' readers run).
        shell = 'exec "$@" 3<&0 4>&1 </dev/null >/dev/null'
        self.proc = subprocess.Popen(["/bin/sh", "-c", shell, "sh", *args], stdin=r_cmd, stdout=w_evt,
                                     stderr=subprocess.PIPE)
        os.close(r_cmd)
        os.close(w_evt)
        self._out = os.fdopen(w_cmd, "wb", buffering=0)
        self._in = os.fdopen(r_evt, "rb", buffering=0)
        self._id = 0
        self._replies: dict[int, dict] = {}
        self.events: list[dict] = []
        self._cv = threading.Condition()
        self._stderr: list[bytes] = []
        self._closed = False
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Runtime.enable", "Log.enable", "Page.enable"):
            self.send(domain)
        self.send("Emulation.setDeviceMetricsOverride", width=size[0], height=size[1], deviceScaleFactor=1,
                  mobile=False)

    def _why(self) -> str:
        code = self.proc.poll()
        if code is None:
            try:
                code = self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                code = "still running"
        tail = b"".join(self._stderr[-20:]).decode(errors="replace").strip()
        return f"exit status {code}; stderr: {tail or '(empty)'}"

    def _drain_stderr(self):
        for line in self.proc.stderr:
            self._stderr.append(line)

    def _read(self):
        buf = b""
        while True:
            chunk = self._in.read(1 << 16)
            if not chunk:
                break
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                with self._cv:
                    if "id" in msg:
                        self._replies[msg["id"]] = msg
                    else:
                        self.events.append(msg)
                    self._cv.notify_all()
        with self._cv:
            self._closed = True
            self._cv.notify_all()

    def call(self, method: str, *, session: str | None = None, timeout: float = 60.0, **params) -> dict:
        with self._cv:
            self._id += 1
            mid = self._id
        msg = {"id": mid, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        try:
            self._out.write(json.dumps(msg).encode() + b"\0")
        except BrokenPipeError:
            raise BrowserGone(self._why()) from None
        end = time.monotonic() + timeout
        with self._cv:
            while mid not in self._replies:
                left = end - time.monotonic()
                if self._closed:
                    raise BrowserGone(f"closed before replying to {method}: {self._why()}")
                if left <= 0:
                    raise TimeoutError(f"no reply to {method} from the browser ({self._why()})")
                self._cv.wait(left)
            reply = self._replies.pop(mid)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def send(self, method: str, **params) -> dict:
        """A call on the page's session."""
        return self.call(method, session=self.session, **params)

    def navigate(self, url: str, timeout: float = 30.0):
        """Load ``url`` and return once its document has replaced the previous one (so a poll that
        follows never reads the old page's state)."""
        self.send("Page.navigate", url=url)
        end = time.monotonic() + timeout
        while self.evaluate("document.URL") != url:
            if time.monotonic() > end:
                raise TimeoutError(f"{url} did not load")
            time.sleep(0.02)

    def evaluate(self, expression: str, *, timeout: float = 60.0):
        res = self.call("Runtime.evaluate", session=self.session, timeout=timeout, expression=expression,
                        returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            raise RuntimeError(f"{expression}: {res['exceptionDetails']}")
        return res["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 60.0, poll: float = 0.05):
        """Poll until ``expression`` is truthy; returns its value (TimeoutError past ``timeout``)."""
        end = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > end:
                raise TimeoutError(f"{expression} still false after {timeout} s; errors: {self.errors()}")
            time.sleep(poll)

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries (failed loads) so far."""
        out = []
        with self._cv:
            events = list(self.events)
        for e in events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown":
                d = p["exceptionDetails"]
                out.append("exception: " + (d.get("exception", {}).get("description") or d.get("text", "")))
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console.error: " + " ".join(str(a.get("value", a.get("description", "")))
                                                          for a in p.get("args", [])))
            elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
                out.append(f"log: {p['entry'].get('text')} {p['entry'].get('url', '')}")
        return out

    def console(self) -> list[str]:
        with self._cv:
            return [" ".join(str(a.get("value", a.get("description", ""))) for a in e["params"].get("args", []))
                    for e in self.events if e.get("method") == "Runtime.consoleAPICalled"]

    def screenshot(self, path: Path) -> Path:
        data = self.send("Page.captureScreenshot", format="png")["data"]
        Path(path).write_bytes(base64.b64decode(data))
        return Path(path)

    def close(self):
        if getattr(self, "proc", None) is None:
            return
        if self.proc.poll() is None:
            try:
                self.call("Browser.close", timeout=5)
            except Exception:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        try:
            self._out.close()
        except OSError:
            pass
        shutil.rmtree(self.profile, ignore_errors=True)
        self.proc = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
