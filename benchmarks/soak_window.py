"""Soak the workbench's window with scripted input until it cannot be made to crash (issue 49, item 4).

    nice -n 10 python benchmarks/soak_window.py --minutes 30 --seed 7 --out soak-out
    python benchmarks/soak_window.py --replay soak-out/crash-7-2/actions.json     # replay a crash

``wowgrass view`` with its panels runs on the sample world under a private Xvfb, with faulthandler
on (``-X faulthandler`` and PYTHONFAULTHANDLER: a segfault prints every thread's Python stack on
stderr, which is kept). xdotool then drives it with random input from one seeded generator: clicks
and drags over the panels and the terrain, keys (tools, overlays, toggles, undo, redo, save, F1,
F12, typing into whatever field is active, Return, Tab, Backspace), held flying keys, the wheel with
and without Ctrl, right-button looks, Esc (the unsaved-edits question, then answered by whatever
comes next) and, rarely, a window resize. A window that ends by itself with status 0 (Esc, then a
"Discard") is started again: an episode. A crash is any other end (a signal: -11 is a segfault; a
Python exception out of the loop), a "Fatal Python error" or a traceback on stderr: the seed, the
episode, every action of the episode (replayable with ``--replay``), the last actions and stderr
are written to ``OUT/crash-SEED-EPISODE/`` and the soak exits 1.

Prints, at the end: seed, episodes, actions, duration, crashes. ``--json`` writes them too.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import deque
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from xvfb import private_xvfb, x_env  # noqa: E402

#: where the panels sit at the default layout (panels.py): clicks go there half the time
PANEL_BOXES = ((8, 8, 260, 200), (8, 330, 360, 720), (300, 8, 620, 260), (-360, 8, -8, 480), (-360, 480, -8, 700),
               (0, -26, -1, -1))
KEYS = (["F5", "F6", "F7", "F8"] * 4 + [str(i) for i in range(1, 9)] * 2
        + ["ctrl+z"] * 6 + ["ctrl+y", "ctrl+shift+z"] * 2 + ["ctrl+s"] * 4 + ["F1", "F3", "F12"]
        + list("gotbrzclmvhf") + ["bracketleft", "bracketright", "Return", "Tab", "BackSpace", "space", "Delete"])
#: lines of the window's stderr counted over the soak (what the random input got done)
MARKERS = {"saves": r"^saved \d+ file", "failed saves": r"^save failed", "undos": r"^undo ", "redos": r"^redo ",
           "quit questions": r"^quit: unsaved", "kept for recovery": r"^unsaved edits kept in",
           "recoveries offered": r"^note: unsaved edits of an earlier session", "restored": r"^restored \d+ file",
           "patches": r"^wrote .*\.MPQ", "screenshots": r"^screenshot ", "sets previewed": r"^effect set \d+ previewed",
           "other failures": r"^\w+ failed: "}
TYPING = "abcdefghijklmnopqrstuvwxyz0123456789_-/.*"


def make_action(rng: random.Random, size) -> dict:
    """One random action (a plain dict: written to the crash folder, replayed as it is)."""
    w, h = size

    def point(panel_bias=0.5):
        if rng.random() < panel_bias:
            x0, y0, x1, y1 = rng.choice(PANEL_BOXES)
            x0, x1 = (x0 + w if x0 < 0 else x0), (x1 + w if x1 < 0 else x1)
            y0, y1 = (y0 + h if y0 < 0 else y0), (y1 + h if y1 < 0 else y1)
            return rng.randint(min(x0, x1), max(x0, x1)), rng.randint(min(y0, y1), max(y0, y1))
        return rng.randint(0, w - 1), rng.randint(0, h - 1)

    r = rng.random()
    if r < 0.30:
        x, y = point()
        return {"do": "click", "x": x, "y": y, "button": 1}
    if r < 0.42:
        pts = [point(0.25) for _ in range(rng.randint(2, 6))]
        return {"do": "drag", "points": pts, "button": rng.choice([1, 1, 1, 3])}
    if r < 0.70:
        return {"do": "key", "key": rng.choice(KEYS)}
    if r < 0.80:
        return {"do": "type", "text": "".join(rng.choice(TYPING) for _ in range(rng.randint(1, 8)))}
    if r < 0.86:
        return {"do": "hold", "key": rng.choice("wasdqe"), "seconds": round(rng.uniform(0.05, 0.5), 2)}
    if r < 0.93:
        x, y = point()
        return {"do": "wheel", "x": x, "y": y, "up": rng.random() < 0.5, "count": rng.randint(1, 4),
                "ctrl": rng.random() < 0.4}
    if r < 0.945:
        return {"do": "key", "key": "Escape"}
    if r < 0.95:
        return {"do": "resize", "w": rng.randint(640, w), "h": rng.randint(400, h)}
    if r < 0.96:
        return {"do": "click", "x": rng.randint(0, w - 1), "y": rng.randint(0, h - 1), "button": 2}
    x, y = point(0.9)  # a double click (a field's word selection, a window's title bar)
    return {"do": "click", "x": x, "y": y, "button": 1, "repeat": 2}


def xdo_args(a: dict, wid: str) -> list[list[str]]:
    """The xdotool command lines of action ``a`` (several where it waits between them)."""
    if a["do"] == "click":
        return [["mousemove", "--window", wid, str(a["x"]), str(a["y"]), "click", "--repeat", str(a.get("repeat", 1)),
                 str(a["button"])]]
    if a["do"] == "drag":
        (x, y), rest = a["points"][0], a["points"][1:]
        cmds = [["mousemove", "--window", wid, str(x), str(y), "mousedown", str(a["button"])]]
        cmds += [["mousemove", "--window", wid, str(px), str(py)] for px, py in rest]
        cmds.append(["mouseup", str(a["button"])])
        return cmds
    if a["do"] == "key":
        return [["key", "--window", wid, a["key"]]]
    if a["do"] == "type":
        return [["type", "--window", wid, "--delay", "15", a["text"]]]
    if a["do"] == "hold":
        return [["keydown", "--window", wid, a["key"]], ["sleep", str(a["seconds"])], ["keyup", "--window", wid, a["key"]]]
    if a["do"] == "wheel":
        btn = "4" if a["up"] else "5"
        cmd = ["mousemove", "--window", wid, str(a["x"]), str(a["y"])]
        if a["ctrl"]:
            cmd += ["keydown", "ctrl"]
        cmd += ["click", "--repeat", str(a["count"]), btn]
        if a["ctrl"]:
            cmd += ["keyup", "ctrl"]
        return [cmd]
    if a["do"] == "resize":
        return [["windowsize", wid, str(a["w"]), str(a["h"])]]
    raise ValueError(a)


class Episode:
    """One ``wowgrass view`` window with its stderr kept in a file."""

    def __init__(self, display, size, workdir: Path, extra=(), tree=None, cache=None):
        self.workdir = workdir
        self.err_path = workdir / "stderr.txt"
        self.err = open(self.err_path, "w")
        env = dict(x_env(display), PYTHONFAULTHANDLER="1")
        if tree:  # a snapshot of the code (git archive): edits to the checkout do not reach a running soak
            env["PYTHONPATH"] = str(tree)
        if cache:  # its own cache: recovery files of stopped windows stay out of the user's
            env["WOWGRASS_CACHE"] = str(cache)
        cmd = [sys.executable, "-X", "faulthandler", "-m", "wowgrass", "view", "--window", "--size",
               f"{size[0]}x{size[1]}", "--panels", "--quit-after", "100000", "--json", *extra]
        self.proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=self.err, text=True)
        self.env = env
        found = subprocess.run(["xdotool", "search", "--sync", "--onlyvisible", "--name", "wowgrass"], env=env,
                               capture_output=True, text=True, timeout=300)
        if found.returncode != 0:
            self.proc.kill()
            raise RuntimeError(f"the window never appeared: {self.stderr()[-2000:]}")
        self.wid = found.stdout.split()[0]

    def stderr(self) -> str:
        self.err.flush()
        return self.err_path.read_text(errors="replace")

    def run(self, a: dict) -> None:
        for args in xdo_args(a, self.wid):
            if args[0] == "sleep":
                time.sleep(float(args[1]))
                continue
            subprocess.run(["xdotool", *args], env=self.env, capture_output=True, timeout=30)

    def sync(self, timeout: float) -> bool:
        """F12, and wait until the window wrote that screenshot: every action before it has been
        taken (the workbench handles input in order). False: no answer within ``timeout`` s."""
        want = self.stderr().count("\nscreenshot ") + 1
        subprocess.run(["xdotool", "key", "--window", self.wid, "F12"], env=self.env, capture_output=True, timeout=30)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.stderr().count("\nscreenshot ") >= want or self.proc.poll() is not None:
                for png in self.workdir.glob("wowgrass-shot-*.png"):
                    png.unlink(missing_ok=True)
                return True
            time.sleep(0.1)
        return False

    def ended(self):
        """None while running, else the exit status."""
        return self.proc.poll()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.communicate()
        self.err.close()
        return self.proc.returncode


def crashed(rc, err: str) -> str | None:
    """Why this end is a crash (None: a clean end)."""
    if "Fatal Python error" in err:
        return "Fatal Python error (faulthandler's dump in stderr.txt)"
    if "Traceback (most recent call last)" in err:
        return "a Python traceback on stderr"
    if rc is not None and rc != 0:
        return f"exit status {rc}" + (" (SIGSEGV)" if rc in (-11, 139) else "")
    return None


def write_crash(out: Path, seed, episode, actions, last_n, err: str, why: str, rc) -> Path:
    d = out / f"crash-{seed}-{episode}"
    d.mkdir(parents=True, exist_ok=True)
    (d / "actions.json").write_text(json.dumps({"seed": seed, "episode": episode, "actions": actions}, indent=1))
    (d / "last_actions.json").write_text(json.dumps(actions[-last_n:], indent=1))
    (d / "stderr.txt").write_text(err)
    (d / "why.txt").write_text(f"{why}\nexit status {rc}\n")
    return d


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=None, help="the input's seed (default: from the clock, printed)")
    ap.add_argument("--minutes", type=float, default=1.0)
    ap.add_argument("--actions", type=int, default=None, help="stop after this many actions")
    ap.add_argument("--episode-actions", type=int, default=2000,
                    help="start a fresh window after this many actions (each start is exercised too)")
    ap.add_argument("--size", default="1280x720")
    ap.add_argument("--pause", type=float, default=0.01, help="seconds between actions")
    ap.add_argument("--out", default="soak-window-out")
    ap.add_argument("--replay", default=None, help="actions.json of a crash: run exactly those")
    ap.add_argument("--last", type=int, default=40, help="the last actions listed with a crash")
    ap.add_argument("--json", default=None)
    ap.add_argument("--view-args", default="--samples 0 --no-shadows --grass-distance 80",
                    help="more options of `wowgrass view` (default: cheaper frames on a software renderer: "
                         "more input taken a minute)")
    ap.add_argument("--sync-every", type=int, default=20, help="wait for the window (an F12 screenshot) every N actions")
    ap.add_argument("--hang-seconds", type=float, default=180.0)
    ap.add_argument("--tree", default=None, help="run the view from this copy of the code (PYTHONPATH): "
                    "git archive HEAD wowgrass cli | tar -x -C DIR; ln -s ../cli DIR/wowgrass/cli")
    ap.add_argument("--cache", default=None, help="the windows' WOWGRASS_CACHE (default: OUT/cache)")
    args = ap.parse_args(argv)
    size = tuple(int(v) for v in args.size.split("x"))
    seed = args.seed if args.seed is not None else int(time.time()) % 100000
    replay = json.loads(Path(args.replay).read_text())["actions"] if args.replay else None
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    xvfb = shutil.which("Xvfb")
    if xvfb is None or shutil.which("xdotool") is None:
        print("error: the soak needs Xvfb and xdotool (apt-get install xvfb xdotool)", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    deadline = t0 + args.minutes * 60.0
    total = episodes = 0
    result = {"seed": seed, "crash": None, "tree": args.tree}
    seen: dict = {}
    print(f"soak: seed {seed}, {args.minutes:g} min, window {size[0]}x{size[1]}", flush=True)
    with private_xvfb(xvfb, size) as display, tempfile.TemporaryDirectory(prefix="wowgrass-soak-") as tmp:
        while True:
            if replay is None and (time.monotonic() >= deadline or (args.actions and total >= args.actions)):
                break
            episodes += 1
            work = Path(tmp) / f"episode-{episodes}"
            work.mkdir()
            ep = Episode(display, size, work, extra=args.view_args.split(), tree=args.tree,
                         cache=args.cache or (out / "cache").resolve())
            done: list = []
            t_ep = time.monotonic()
            why = rc = None
            try:
                while True:
                    if replay is not None:
                        if len(done) >= len(replay):
                            break
                        a = replay[len(done)]
                    else:
                        if time.monotonic() >= deadline or len(done) >= args.episode_actions or (
                                args.actions and total >= args.actions):
                            break
                        a = make_action(rng, size)
                    a = dict(a, t=round(time.monotonic() - t_ep, 3))
                    done.append(a)
                    total += 1
                    ep.run(a)
                    rc = ep.ended()
                    if rc is not None:
                        break
                    if args.pause:
                        time.sleep(args.pause)
                    if args.sync_every and len(done) % args.sync_every == 0 and not ep.sync(args.hang_seconds):
                        why = f"no answer to F12 in {args.hang_seconds:g} s (a hang)"
                        break
                    if total % 500 == 0:
                        print(f"  {total} actions, episode {episodes}, {time.monotonic() - t0:.0f} s", flush=True)
            finally:
                if rc is None:
                    time.sleep(1.0)  # the last action's effects
                    rc = ep.ended()
                err = ep.stderr()
                if rc is None:
                    ep.stop()
                    rc = None  # stopped by the soak: not an end of its own
                else:
                    ep.stop()
            (out / "last-episode-stderr.txt").write_text(err)
            notes = [ln for ln in err.splitlines() if re.match(r"^(\w+ failed|save failed|patch failed|warning|error)", ln)]
            if notes:  # failures the window said and went on from: kept from every episode
                with open(out / "said-failures.txt", "a") as f:
                    f.write("".join(f"episode {episodes}: {ln}\n" for ln in notes))
            for name, rx in MARKERS.items():  # what the input made the window do (the report's figures)
                seen[name] = seen.get(name, 0) + len(re.findall(rx, err, re.M))
            why = why or crashed(rc, err)
            if why:
                d = write_crash(out, seed, episodes, done, args.last, err, why, rc)
                result["crash"] = {"why": why, "exit_status": rc, "episode": episodes, "actions_in_episode": len(done),
                                   "folder": str(d)}
                print(f"CRASH: {why} in episode {episodes} after {len(done)} actions; written to {d}", flush=True)
                break
            print(f"  episode {episodes}: {len(done)} actions, "
                  + (f"ended by itself (status {rc})" if rc is not None else "stopped"), flush=True)
            if replay is not None:
                break
    result.update(episodes=episodes, actions=total, seconds=round(time.monotonic() - t0, 1), seen=seen)
    print("  the window said: " + ", ".join(f"{k} {v}" for k, v in seen.items()), flush=True)
    print(f"soak: seed {seed}, {episodes} episode(s), {total} actions in {result['seconds']:.0f} s, "
          + ("a crash: " + result["crash"]["why"] if result["crash"] else "no crash"), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 1 if result["crash"] else 0


if __name__ == "__main__":
    sys.exit(main())
