"""The fuzzing harness (benchmarks/fuzz.py) in CI: a short fixed-seed pass over every format and
the command line, and the replay of tests/fixtures/crashes/ (minimised inputs of every escape the
harness has found; each must now end as parsed or as a clean error with a byte offset)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

FUZZ_PATH = Path(__file__).parents[1] / "benchmarks" / "fuzz.py"
CRASHES = Path(__file__).parent / "fixtures" / "crashes"


def _load():
    spec = importlib.util.spec_from_file_location("wowgrass_fuzz", FUZZ_PATH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["wowgrass_fuzz"] = mod
    spec.loader.exec_module(mod)
    return mod


fuzz = _load()

#: cases per format in CI (seconds under load on 2 cores: ~1 s each for the small formats, ~10 s
#: for ADT, ~10 s for the CLI, which forks a real command per case)
CI_CASES = {"dbc": 2000, "wdt": 2000, "wdl": 2000, "blp": 2000, "m2": 2000, "mpq": 2000, "bundle": 1500, "adt": 500, "liquid": 2000,
            "wmo": 1000, "grid": 300, "cli": 250}


@pytest.mark.parametrize("fmt", fuzz.FORMATS)
def test_fuzz_short_pass(fmt):
    s = fuzz.fuzz_format(fmt, seed=20261201, cases=CI_CASES[fmt], jobs=2, timeout=60, mem_mb=1024)
    assert s.cases == CI_CASES[fmt]
    assert (s.escapes, s.hangs, s.memory) == (0, 0, 0), s.findings[:10]
    assert s.no_offset == 0, s.no_offset_examples
    assert s.parsed and s.clean     # the mutations reach both outcomes: the pass is not vacuous


def test_cases_are_deterministic():
    for fmt in ("dbc", "mpq", "cli"):
        a = fuzz.make_case(fmt, 3, 17)
        b = fuzz.make_case(fmt, 3, 17)
        assert a[:2] == b[:2]
        assert fuzz.make_case(fmt, 3, 18)[1] != a[1] or fuzz.make_case(fmt, 4, 17)[1] != a[1]


def test_watchdog_catches_hangs_and_blow_ups(monkeypatch):
    """A target that hangs is killed and counted; one that allocates without bound is a memory case."""
    import time as _time

    def hang(parts, workdir):
        _time.sleep(3600)

    def blow_up(parts, workdir):
        b = []
        while True:
            b.append(bytearray(64 << 20))

    target = fuzz.TARGETS["wdt"]
    monkeypatch.setattr(target, "parse", hang)
    s = fuzz.fuzz_format("wdt", seed=1, cases=3, jobs=2, timeout=2, mem_mb=256, batch=2)
    assert (s.cases, s.hangs, s.escapes) == (3, 3, 0)
    monkeypatch.setattr(target, "parse", blow_up)
    s = fuzz.fuzz_format("wdt", seed=1, cases=3, jobs=1, timeout=30, mem_mb=256, batch=3)
    assert s.cases == 3 and s.memory == 3


def test_cli_case_sees_tracebacks_and_exit_status(tmp_path):
    code, err = fuzz.run_cli(["dbc", "info", str(tmp_path / "missing.dbc")])
    assert code == 2 and "Traceback" not in err and "error:" in err
    code, err = fuzz.run_cli(["--version"])
    assert code == 0


CRASH_NOTES = sorted(CRASHES.glob("*.json"))


@pytest.mark.parametrize("note", CRASH_NOTES, ids=[p.stem for p in CRASH_NOTES])
def test_crash_corpus_replays_clean(note, tmp_path):
    meta, parts = fuzz.load_crash(note)
    outcome, detail = fuzz.run_parts(meta["format"], meta["label"], parts, tmp_path)
    assert outcome in ("parsed", "clean"), (meta["detail"], outcome, detail)


def test_crash_corpus_is_there():
    assert len(CRASH_NOTES) >= 3, "the escapes the harness found before the fixes are kept as a corpus"
