"""Mutation testing of the modules whose results users rely on (mutmut 3), one module at a time.

    make mutate                                   # every module below, smallest first
    python benchmarks/mutate.py capacity light    # some of them
    python benchmarks/mutate.py --list            # the modules, their files and their tests

Each module runs in a folder of its own under ``build/mutate/<module>/`` that holds links to the
package, the tests and the docs and a ``pyproject.toml`` whose ``[tool.mutmut]`` names that module
alone and only the test files that cover it (mutmut then runs, for each mutant, only the tests that
reached the mutated function). The folders keep mutmut's results, so a second run only tries the
mutants of functions that changed. At the end a line per module: killed / total and the share, and
the survivors by name (``cd build/mutate/<module> && mutmut show NAME`` shows one). Not part of
``make test``: a module takes minutes to an hour on two cores. docs/testing.md lists the survivors
that are equivalent to the original, with why.

Killed counts mutmut's "killed", "timeout" (a mutant that hangs a test is caught) and "segfault"; a
mutant no selected test reaches ("no tests") counts as a survivor.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "build" / "mutate"

#: module -> the file, the functions to mutate (globs over mutmut's names; None: all) and the tests.
#: The tests are the files that exercise the module directly; GL and window tests stay out (they
#: need a display or a context that does not survive mutmut's fork).
MODULES: dict[str, dict] = {
    "capacity": {
        "file": "wowgrass/grass/capacity.py",
        "tests": ["tests/test_capacity.py"],
    },
    "masks": {
        "file": "wowgrass/edit/masks.py",
        "tests": ["tests/test_exclusion_masks.py", "tests/test_effects_workbench.py", "tests/test_mh2o_offsets.py",
                  "tests/test_workbench_session.py"],
    },
    "adt_edit": {
        "file": "wowgrass/edit/adt_edit.py",
        "tests": ["tests/test_adt_edit.py", "tests/test_effects_workbench.py", "tests/test_write_all_or_none.py",
                  "tests/test_mutants_adt_edit.py"],
    },
    "fileio": {
        "file": "wowgrass/fileio.py",
        # (test_faults.py drives whole commands into full disks: half a minute a mutant, so left out)
        "tests": ["tests/test_write_all_or_none.py", "tests/test_fileio.py", "tests/test_direct_write.py",
                  "tests/test_mutants_fileio.py"],
    },
    "placement": {
        "file": "wowgrass/grass/placement.py",
        # the client scatter: its noise streams, seeds, planes and ClientPlacement
        "functions": ["_noise_word", "_rotl32", "_lane_ext", "client_seed", "client_chunk_seeds",
                      "_lane_offsets", "_stream_rows", "client_draws", "_client_stream", "client_reals",
                      "_mask32", "_pick32", "is_335_routine", "client_picks", "client_picks_note",
                      "_exact_effect_rows", "_slot_doodads", "_client_planes_335", "_segment_starts",
                      "ǁClientPlacementǁ*", "_triangle_335"],
        "tests": ["tests/test_placement.py", "tests/test_placement_realdata.py", "tests/test_vectors.py",
                  "tests/test_capacity.py", "tests/test_mutants_placement.py"],
    },
    "light": {
        "file": "wowgrass/game/light.py",
        "tests": ["tests/test_light.py"],
    },
    "history": {
        "file": "wowgrass/workbench/history.py",
        "tests": ["tests/test_workbench_history.py", "tests/test_workbench_session.py"],
    },
    "session": {
        "file": "wowgrass/workbench/session.py",
        "tests": ["tests/test_workbench_session.py", "tests/test_suggest.py", "tests/test_workbench_events.py",
                  "tests/test_mutants_session.py"],
    },
}


def mutant_globs(name: str, spec: dict) -> list[str]:
    """mutmut's names for the module's mutants: ``pkg.mod.x_func__mutmut_N`` (a method:
    ``pkg.mod.xǁClassǁmethod__mutmut_N``)."""
    module = spec["file"][:-3].replace("/", ".")
    if not spec.get("functions"):
        return [f"{module}.*"]
    return [f"{module}.x{f}__mutmut_*" if f.startswith("ǁ") else f"{module}.x_{f}__mutmut_*" for f in spec["functions"]]


def prepare(name: str, spec: dict) -> Path:
    """The module's folder: links to the tree and a pyproject.toml naming the module and its tests."""
    work = WORK / name
    work.mkdir(parents=True, exist_ok=True)
    for entry in ("wowgrass", "cli", "tests", "docs", "benchmarks"):
        link = work / entry
        # a folder copied from another checkout (or another machine) points elsewhere: point it here
        if link.is_symlink() and link.resolve() != (ROOT / entry).resolve():
            link.unlink()
        if not link.exists():
            link.symlink_to(ROOT / entry)
    tests = [t for t in spec["tests"] if (ROOT / t).exists()]
    project = (ROOT / "pyproject.toml").read_text("utf-8")
    project = project.split("\n[tool.mutmut]")[0]
    conf = {
        "source_paths": ["wowgrass"],
        "only_mutate": [spec["file"]],
        "also_copy": ["cli", "docs", "benchmarks"],
        "pytest_add_cli_args": ["-q", "-p", "no:cacheprovider", "-m", "not network and not gl and not window"],
        "pytest_add_cli_args_test_selection": tests,
        # mutmut limits a mutant to (the tests' time + constant) x multiplier x 2 CPU seconds; the tests'
        # time leaves out their fixtures (a sample world built per module), so the constant is large
        "timeout_multiplier": 2.0,
        "timeout_constant": 60.0,
    }
    lines = ["", "[tool.mutmut]"] + [f"{k} = {json.dumps(v, ensure_ascii=False)}" for k, v in conf.items()]
    text = project.rstrip("\n") + "\n" + "\n".join(lines) + "\n"
    if not (work / "pyproject.toml").exists() or (work / "pyproject.toml").read_text("utf-8") != text:
        (work / "pyproject.toml").write_text(text, "utf-8")
    return work


def results(work: Path, globs: list[str]) -> dict:
    """killed, total and the survivors' names from mutmut's meta files of the module."""
    import fnmatch

    from mutmut.stats import status_by_exit_code

    counts: dict[str, int] = {}
    survivors, timeouts = [], []
    for meta in (work / "mutants").rglob("*.py.meta"):
        data = json.loads(meta.read_text("utf-8"))
        for key, code in data.get("exit_code_by_key", {}).items():
            if not any(fnmatch.fnmatchcase(key, g) for g in globs):
                continue
            status = status_by_exit_code[code]
            counts[status] = counts.get(status, 0) + 1
            if status in ("survived", "no tests"):
                survivors.append(key)
            elif status == "timeout":
                timeouts.append(key)
    total = sum(counts.values())
    tried = total - counts.get("not checked", 0)
    killed = sum(counts.get(k, 0) for k in ("killed", "timeout", "segfault"))
    return {"killed": killed, "tried": tried, "total": total,
            "percent": round(100 * killed / tried, 1) if tried else 0.0,
            "counts": counts, "survivors": sorted(survivors), "timeouts": sorted(timeouts)}


def forget(work: Path, globs: list[str]) -> int:
    """Mark the module's survivors and timeouts untried in mutmut's meta files; how many."""
    import fnmatch

    from mutmut.stats import status_by_exit_code

    count = 0
    for meta in (work / "mutants").rglob("*.py.meta"):
        data = json.loads(meta.read_text("utf-8"))
        codes = data.get("exit_code_by_key", {})
        for key, code in codes.items():
            if code is not None and any(fnmatch.fnmatchcase(key, g) for g in globs) and \
                    status_by_exit_code[code] in ("survived", "no tests", "timeout"):
                codes[key] = None
                count += 1
        meta.write_text(json.dumps(data, indent=4), "utf-8")
    return count


def survivor_diffs(mutated: Path, names: list[str]) -> str:
    """The survivors as diffs of each mutant's function against the original, read from the mutated
    file mutmut wrote (one function per mutant, beside ``..._mutmut_orig``)."""
    import ast
    import difflib

    if not mutated.exists():
        return ""
    source = mutated.read_text("utf-8")
    lines = source.splitlines()
    funcs = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and "__mutmut_" in node.name:
            funcs[node.name] = lines[node.lineno - 1 - len(node.decorator_list):node.end_lineno]
    out = []
    for key in names:
        fname = key.rsplit(".", 1)[-1]
        orig = funcs.get(fname.rsplit("__mutmut_", 1)[0] + "__mutmut_orig")
        mutant = funcs.get(fname)
        if orig is None or mutant is None:
            out.append(f"# {key}: not in {mutated.name}\n")
            continue
        body = [ln.replace("__mutmut_orig", "") for ln in orig]
        changed = [ln.replace(fname.rsplit("__mutmut_", 1)[1].join(("__mutmut_", "")), "") for ln in mutant]
        out.append(f"# {key}\n" + "".join(difflib.unified_diff([ln + "\n" for ln in body], [ln + "\n" for ln in changed],
                                                                "original", "mutant", n=1)))
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("modules", nargs="*", help=f"some of: {', '.join(MODULES)} (default: all)")
    ap.add_argument("--list", action="store_true", help="print the modules, files and tests, and stop")
    ap.add_argument("--jobs", type=int, default=2, help="mutants tried at once (default 2)")
    ap.add_argument("--survivors", action="store_true",
                    help="try the survivors and timeouts of the last run again (after adding tests), with the mutants not tried yet")
    ap.add_argument("--minutes", type=float, default=None,
                    help="stop each module's run after this long and report what it reached (mutmut keeps "
                         "the results: the next run goes on from there)")
    ap.add_argument("--report", action="store_true", help="print the figures of earlier runs only")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    ap.add_argument("--diffs", type=Path, metavar="DIR",
                    help="with --report: write each module's survivors as diffs to DIR/<module>.diff")
    args = ap.parse_args(argv)
    names = args.modules or list(MODULES)
    unknown = [n for n in names if n not in MODULES]
    if unknown:
        print(f"error: no module {', '.join(unknown)} (modules: {', '.join(MODULES)})", file=sys.stderr)
        return 2
    if args.list:
        for n in names:
            print(f"{n}: {MODULES[n]['file']} ({', '.join(MODULES[n].get('functions') or ['all'])})")
            print(f"    tests: {' '.join(MODULES[n]['tests'])}")
        return 0
    # the venv's script, else the module (a --target install has no script beside the interpreter)
    mutmut = Path(sys.executable).with_name("mutmut")
    mutmut_cmd = [str(mutmut)] if mutmut.exists() else [sys.executable, "-m", "mutmut"]
    figures = {}
    for n in names:
        spec = MODULES[n]
        work = prepare(n, spec)
        globs = mutant_globs(n, spec)
        if not args.report:
            print(f"== {n}: {spec['file']}", flush=True)
            # names only where part of a file is mutated (a named mutant is always tried again)
            names = globs if spec.get("functions") else []
            if args.survivors and (work / "mutants").exists():
                # the survivors and timeouts marked untried, so the run tries them with the mutants
                # not tried yet (mutmut keeps the others' results while their function is unchanged)
                forget(work, globs)
                # mutmut keeps the tests it found for each function: new tests need new stats
                (work / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
            cmd = [*mutmut_cmd, "run", "--max-children", str(args.jobs), *names]
            env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
            proc = subprocess.Popen(cmd, cwd=work, env=env, start_new_session=True)
            try:
                proc.wait(timeout=args.minutes * 60 if args.minutes else None)
            except subprocess.TimeoutExpired:
                print(f"\n== {n}: stopped after {args.minutes:g} min (partial figures)", flush=True)
                proc.send_signal(signal.SIGINT)      # mutmut stops its workers and keeps the results so far
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # a worker mutmut left running (its own session)
            except ProcessLookupError:
                pass
        figures[n] = results(work, globs)
    print()
    for n, f in figures.items():
        print(f"{n:10s} {f['killed']:5d} / {f['tried']:5d} killed  {f['percent']:5.1f} %  ({f['tried']} of {f['total']} "
              f"mutants tried)  {f['counts']}")
        for s in f["survivors"]:
            print(f"    survived: {s}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1), "utf-8")
    if args.diffs:
        args.diffs.mkdir(parents=True, exist_ok=True)
        for n, f in figures.items():
            text = survivor_diffs(WORK / n / "mutants" / MODULES[n]["file"], f["survivors"])
            (args.diffs / f"{n}.diff").write_text(text, "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
