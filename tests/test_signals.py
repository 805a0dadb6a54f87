"""Ctrl-C at any moment of a command ends it with its one line and exit status 130, never a
traceback (issue 49.17; docs/cli.md, "Pipes and signals"). Each command runs once to time it, then
again with SIGINT sent to its process group (as a terminal's Ctrl-C, or `timeout -s INT`, sends it)
every 0.05 s over that time: while it opens archives, starts and feeds its worker processes, writes,
and exits. Before the fix, the MPQ reader's clean-up raised BufferError ("cannot close exported
pointers exist") when the signal came while an archive was opened, worker processes printed their
own tracebacks, and a signal during start-up or exit printed Python's."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from wowgrass.samples import build_sample_world

STEP = 0.05
MAX_RUNS = 24
#: the program as the installed script starts it, once the interpreter is up (its own start-up,
#: before any wowgrass code runs, is Python's): a byte on stdout says it is about to run
START = "from wowgrass.__main__ import main; import os; os.write(1, b'.'); main()"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    base = tmp_path_factory.mktemp("signals")
    return {"data": build_sample_world(base / "client", "3.3.5", (2, 1), seed=0), "base": base}


def commands(world) -> dict:
    data, base = str(world["data"]), world["base"]
    return {
        "bake --jobs": ["bake", "--data", data, "--jobs", "2", "--force", "-q"],
        "export layers --jobs": ["export", "layers", "--data", data, "-j", "2", "-o", str(base / "layers{n}"), "-q"],
        "effects audit --jobs": ["effects", "audit", "--data", data, "--jobs", "2", "-q"],
        "maps": ["maps", "--data", data, "-q"],
    }


def run(args, env, offset=None) -> tuple[int, str, float]:
    """(exit status, stderr, seconds) of the program, SIGINT to its group ``offset`` s in."""
    p = subprocess.Popen([sys.executable, "-c", START, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True, env=env)
    p.stdout.read(1)
    t0 = time.monotonic()
    if offset is not None:
        while p.poll() is None and time.monotonic() - t0 < offset:
            time.sleep(0.002)
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
    try:
        _out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGABRT)      # faulthandler: every thread's stack on stderr
        _out, err = p.communicate()
        pytest.fail(f"{args[:2]} hung after SIGINT at {offset} s:\n{err.decode(errors='replace')[-4000:]}")
    return p.returncode, err.decode(errors="replace"), time.monotonic() - t0


@pytest.mark.parametrize("name", ["bake --jobs", "export layers --jobs", "effects audit --jobs", "maps"])
def test_sigint_at_any_moment_is_130_and_one_line(world, tmp_path, name):
    env = dict(os.environ, WOWGRASS_CACHE=str(tmp_path / "cache"), PYTHONFAULTHANDLER="1")
    args = commands(world)[name]
    rc, err, seconds = run([a.format(n="") for a in args], env)
    assert rc == 0 and err == "", f"{name} without a signal: {rc} {err}"
    # every 0.05 s over the run (on a loaded machine, where it takes longer, MAX_RUNS spread over it)
    step = max(STEP, seconds / MAX_RUNS)
    offsets = [k * step for k in range(1, math.ceil(seconds / step) + 1)]
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda k: run([a.format(n=k) for a in args], env, offsets[k]), range(len(offsets))))
    bad, stopped = [], 0
    for offset, (rc, err, _s) in zip(offsets, results):
        lines = err.splitlines()
        if rc == 130:
            stopped += 1
            ok = len(lines) == 1 and lines[0].startswith("interrupted")
        else:     # the signal came after the work was done: the command's own exit, nothing said
            ok = rc == 0 and err == ""
        if not ok:
            bad.append(f"at {offset:.2f} s: exit status {rc}\n{err[-2500:]}")
    assert not bad, f"{name}: {len(bad)} of {len(results)} runs:\n" + "\n".join(bad[:3])
    assert stopped >= len(offsets) // 2, (stopped, len(offsets))   # most came while it ran: a real sweep


def test_ctrl_c_while_an_archive_opens_is_a_keyboard_interrupt(world, monkeypatch):
    # the BufferError of `timeout -s INT 0.4 wowgrass bake --data Data --jobs 2 --force` (1 run in
    # 10): Ctrl-C while a table was read from a view of the map; open()'s clean-up closed the map
    # under that view ("cannot close exported pointers exist") instead of letting the interrupt through
    from wowgrass.formats import mpq

    def ctrl_c(raw, key):   # while a table's words, a view of the map, are decrypted
        raise KeyboardInterrupt

    monkeypatch.setattr(mpq, "decrypt_words", ctrl_c)
    archive = next(world["data"].glob("*.MPQ"))
    with pytest.raises(KeyboardInterrupt):
        mpq.MpqArchive.open(archive)
