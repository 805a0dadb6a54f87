"""Coverage-guided fuzzing of every wowgrass parser with atheris (libFuzzer for Python).

    pip install -e '.[fuzz]'                       # atheris: an optional extra, not a dependency
    python benchmarks/fuzz_cov.py --formats adt,dbc --runs 1000000 --out DIR
    python benchmarks/fuzz_cov.py --formats all --runs 20000 --out DIR --jobs 2   # a quick look

Each format runs in its own process: wowgrass's modules are imported under atheris's
instrumentation, the corpus (``DIR/corpus/<fmt>``) is seeded from the inputs ``benchmarks/fuzz.py``
builds (sample-world files and writer output) plus ``tests/fixtures/crashes/`` of that format, and
libFuzzer mutates towards new branches for ``--runs`` executions. The targets are those of
``fuzz.py`` (so a format added there, e.g. WDL, is fuzzed here too); bundles and grid files whose
checksum fails are parsed a second time with the checksum made right, so the structure behind the
check is reached.

A case ends as fuzz.py classifies it (parsed, clean, escape, memory). An escape or memory case does
not stop the run: the input is saved as ``DIR/crashes/<fmt>-<digest>`` in fuzz.py's crash format
(copy it to tests/fixtures/crashes/ with its fix; tests/test_fuzz.py replays it). A hang (libFuzzer's
``-timeout``) or a dead process restarts the format with its corpus; the artifact is kept.

Coverage: libFuzzer's edge count (``cov``) and features (``ft``), and the lines of the format's
module that the seed corpus and the final corpus reach (replayed under ``sys.settrace``), so the
table says what the fuzzing found beyond the seeds. ``DIR/fuzz_cov.json`` holds it all.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PART_SEP = b"\n--wowgrass-part--\n"   # an input of several files (an M2 and its skin)

#: the module whose lines count as the format's coverage
MODULES = {"mpq": "wowgrass/formats/mpq.py", "dbc": "wowgrass/formats/dbc.py", "wdt": "wowgrass/formats/wdt.py",
           "adt": "wowgrass/formats/adt.py", "m2": "wowgrass/formats/m2.py", "blp": "wowgrass/formats/blp.py",
           "bundle": "wowgrass/grass/bundle.py", "grid": "wowgrass/grass/grid_tiles.py", "wmo": "wowgrass/formats/wmo.py",
           "liquid": "wowgrass/formats/liquid.py", "wdl": "wowgrass/formats/wdl.py"}


def _grid_module():
    return importlib.import_module("wowgrass.grass.grid_tiles")


def _load_fuzz():
    spec = importlib.util.spec_from_file_location("wowgrass_fuzz", HERE / "fuzz.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["wowgrass_fuzz"] = mod
    spec.loader.exec_module(mod)
    return mod


# ------------------------------------------------------------------------------------ targets
def _adt_compressed_bases(bases):
    """The sample tiles again with every alpha layer stored compressed (MCNK flag 0x200): the
    run-length branch the sample world does not use."""
    import numpy as np

    from wowgrass.formats.adt import AdtTile, write_adt

    out = []
    for label, parts in bases:
        try:
            t = AdtTile.from_bytes(parts[0], label, big_alpha=True)
        except Exception:  # noqa: BLE001 - a 4-bit tile: left as it is
            continue
        flags = np.asarray(t.layer_flags).copy()
        flags[np.asarray(t.alpha_encoding) > 0] |= 0x200   # MCLY: the layer's alpha map is compressed
        t.layer_flags = flags
        t.alpha_encoding = np.where(np.asarray(t.alpha_encoding) > 0, 3, 0).astype(np.uint8)
        out.append((f"{label}-compressed", (write_adt(t),)))
    return out


def _adt_liquid_wmo_bases(bases, fuzz):
    """The sample tiles again carrying the seeds the liquid and wmo targets gained: 3.3.5 with the
    liquid target's MH2O payload (every vertex format, an ocean chunk without a bitmap, attributes),
    1.12 with its MCLQ payloads under their MCNK flags (river, ocean + magma, slime), and both with
    more MODF placements (a second WMO name, rotated and scaled copies, doodad and name sets), so the
    ADT target starts at the liquid and map-object branches those targets reach."""
    import numpy as np

    from wowgrass.formats.adt import AdtTile, write_adt

    liquid = dict(fuzz._liquid_bases())
    out = []
    for label, parts in bases:
        try:
            t = AdtTile.from_bytes(parts[0], label, big_alpha=True)
        except Exception:  # noqa: BLE001 - a 4-bit (1.12) tile
            t = AdtTile.from_bytes(parts[0], label, big_alpha=False)
        if t.mh2o is not None:
            t.mh2o = liquid["mh2o"][0]
        else:
            flags = np.asarray(t.chunk_flags).copy()
            for k, (name, chunks) in enumerate((("mclq-4", (3, 19)), ("mclq-18", (20, 35)), ("mclq-20", (36, 52)))):
                payload, meta = liquid[name]
                for c in chunks:
                    t.liquids[c] = payload
                    flags[c] = (int(flags[c]) & ~0x3C & 0xFFFFFFFF) | int.from_bytes(meta, "little")
            t.chunk_flags = flags
        if t.modf is not None and len(t.modf):
            extra = np.repeat(t.modf[:1], 3)
            extra["name_id"] = [0, 1, 1]
            extra["unique_id"] += np.arange(1, 4, dtype=np.uint32)
            extra["rotation"][:, 1] = [0.0, 180.0, 33.0]
            extra["rotation"][:, 0] = [0.0, 12.0, 0.0]
            extra["position"][:, 0] += [40.0, -40.0, 80.0]
            extra["doodad_set"] = [0, 2, 7]
            extra["name_set"] = [0, 1, 0]
            extra["flags"] = [0, 0x4, 0x2]          # 0x4: MODF scale (3.3.5+) in the pad
            extra["pad"] = [0, 2048, 0]
            t.modf = np.concatenate([t.modf, extra])
            t.wmos = list(t.wmos) + ["World\\wmo\\Sample\\Buildings\\SampleHouse\\SampleHouse02.wmo"]
        out.append((f"{label}-liquid-wmo", (write_adt(t),)))
    return out


def _grid_fix(parts):
    """The grid file's checksum made right (the last 4 bytes of its header), as _bundle_fix does."""
    import struct

    grid = _grid_module()
    if len(parts[0]) < grid.HEADER_SIZE:
        return None
    b = bytearray(parts[0])
    struct.pack_into("<I", b, grid.HEADER_SIZE - 4, grid.file_checksum(b))
    return [bytes(b)]


def _bundle_fix(parts):
    import struct

    from wowgrass.grass import bundle

    if len(parts[0]) < bundle.HEADER_SIZE:
        return None
    b = bytearray(parts[0])
    struct.pack_into("<I", b, bundle.CHECKSUM_OFFSET, bundle.file_checksum(b))
    return [bytes(b)]


def targets(fuzz):
    """name -> (bases(), parse(parts, workdir), checksum_fix(parts) | None): fuzz.py's formats."""
    out = {}
    fixes = {"bundle": _bundle_fix, "grid": _grid_fix}
    for name, t in fuzz.TARGETS.items():
        if name != "cli":
            out[name] = (t.inputs, t.parse, fixes.get(name))
    adt_bases = out["adt"][0]
    out["adt"] = (lambda: adt_bases() + _adt_compressed_bases(adt_bases()) + _adt_liquid_wmo_bases(adt_bases(), fuzz),
                  *out["adt"][1:])
    # a new format: add a Target to fuzz.TARGETS and it is fuzzed here too; give MODULES its module
    # for the line coverage
    return out


def join_parts(parts) -> bytes:
    return PART_SEP.join(p for p in parts if p is not None)


def split_parts(data: bytes) -> tuple[bytes, ...]:
    return tuple(data.split(PART_SEP, 1))


# ------------------------------------------------------------------------------------ worker
class Recorder:
    """Counts executions and outcomes; saves every new escape (by where it happened) once."""

    def __init__(self, fmt, out: Path, runs_before: int, fuzz):
        self.fmt, self.out, self.fuzz = fmt, out, fuzz
        self.stats_path = out / fmt / "stats.json"
        old = json.loads(self.stats_path.read_text()) if self.stats_path.exists() else {}
        self.execs = old.get("execs", 0)
        self.outcomes = old.get("outcomes", {})
        self.findings = old.get("findings", {})
        self.started = time.time()
        self.seconds_before = old.get("seconds", 0.0)
        self.last_write = 0
        self.last_time = time.time()

    def record(self, outcome, detail, parts):
        self.execs += 1
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        if outcome in ("escape", "memory", "clean-no-offset"):
            sig = detail.split(": ")[0] if outcome == "escape" else f"{outcome}: {detail[:80]}"
            if sig not in self.findings:
                stem = self.fuzz.save_crash(self.out / "crashes", self.fmt, -1, self.execs, parts, "atheris",
                                            outcome, detail)
                self.findings[sig] = {"outcome": outcome, "detail": detail, "file": str(stem), "count": 0,
                                      "first_exec": self.execs}
                print(f"\n[fuzz_cov] {self.fmt}: new {outcome}: {detail}", file=sys.stderr, flush=True)
            self.findings[sig]["count"] += 1
        # also every few seconds: libFuzzer's -max_total_time ends the process without Python's atexit
        if self.execs - self.last_write >= 5000 or time.time() - self.last_time > 3:
            self.write()

    def write(self):
        self.last_write = self.execs
        self.last_time = time.time()
        d = {"format": self.fmt, "execs": self.execs, "outcomes": self.outcomes, "findings": self.findings,
             "seconds": self.seconds_before + time.time() - self.started}
        tmp = self.stats_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(d, indent=1))
        os.replace(tmp, self.stats_path)


def seed_corpus(fmt, bases, corpus: Path, fuzz) -> int:
    """Write the seeds (fuzz.py's bases, the kept crashes of this format) into an empty corpus."""
    corpus.mkdir(parents=True, exist_ok=True)
    if any(corpus.iterdir()):
        return 0
    seeds = [parts for _label, parts in bases()]
    crashes = ROOT / "tests" / "fixtures" / "crashes"
    for note in sorted(crashes.glob(f"{fmt}-*.json")):
        seeds.append(fuzz.load_crash(note)[1])
    for parts in seeds:
        data = join_parts(parts)
        (corpus / f"seed-{hashlib.sha1(data).hexdigest()[:16]}").write_bytes(data)
    return len(seeds)


def worker(fmt: str, runs: int, out: Path, mem_mb: int, timeout: int, max_len: int, seconds: int = 0) -> None:
    import atheris

    with atheris.instrument_imports(include=["wowgrass"], exclude=["wowgrass.cli", "wowgrass.render",
                                                                   "wowgrass.samples", "wowgrass.export"]):
        fuzz = _load_fuzz()
        import wowgrass.binary  # noqa: F401
        import wowgrass.grass.bundle  # noqa: F401
        import wowgrass.formats.adt  # noqa: F401
        import wowgrass.formats.blp  # noqa: F401
        import wowgrass.formats.chunks  # noqa: F401
        import wowgrass.formats.dbc  # noqa: F401
        import wowgrass.formats.m2  # noqa: F401
        import wowgrass.formats.mpq  # noqa: F401
        import wowgrass.formats.wdt  # noqa: F401
        _grid_module()
        for extra in ("wowgrass.formats.wmo", "wowgrass.formats.liquid", "wowgrass.formats.wdl"):
            if importlib.util.find_spec(extra) is not None:
                importlib.import_module(extra)
    from wowgrass.errors import ChecksumError

    bases, parse, fix = targets(fuzz)[fmt]
    corpus = out / "corpus" / fmt
    seeded = seed_corpus(fmt, bases, corpus, fuzz)
    workdir = Path(os.environ.get("FUZZ_COV_TMP", "/dev/shm" if os.path.isdir("/dev/shm") else "/tmp"))
    workdir = workdir / f"fuzz-cov-{fmt}-{os.getpid()}"
    workdir.mkdir(parents=True, exist_ok=True)
    rec = Recorder(fmt, out, 0, fuzz)
    # a runaway allocation is a MemoryError (a finding), not the machine's memory
    with open("/proc/self/statm") as f:
        vm = int(f.read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (vm + mem_mb * 2**20, resource.getrlimit(resource.RLIMIT_AS)[1]))
    target_runs = rec.execs + runs

    def one(parts):
        try:
            parse(parts, workdir)
        except ChecksumError:
            fixed = fix(list(parts)) if fix else None
            if fixed is None:
                return "clean", ""
            return one_fixed(fixed)
        except BaseException as exc:  # noqa: BLE001 - classifying every ending is the point
            if isinstance(exc, KeyboardInterrupt):
                raise
            return fuzz.classify(exc)
        return "parsed", ""

    def one_fixed(parts):
        try:
            parse(parts, workdir)
        except BaseException as exc:  # noqa: BLE001
            if isinstance(exc, KeyboardInterrupt):
                raise
            return fuzz.classify(exc)
        return "parsed", ""

    def rss_mb() -> float:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize() / 2**20

    start_rss = rss_mb()

    def test_one_input(data: bytes) -> None:
        parts = split_parts(data)
        outcome, detail = one(parts)
        rec.record(outcome, detail, parts)
        if rec.execs >= target_runs:
            rec.write()
        elif rec.execs % 1000 == 0 and rss_mb() - start_rss > mem_mb / 2:
            # the worker itself grows under atheris (the same inputs replayed without it do not):
            # start afresh with the corpus before the address-space limit turns that into findings
            rec.write()
            print(f"[fuzz_cov] {fmt}: worker grew by {rss_mb() - start_rss:.0f} MB: restarting", file=sys.stderr,
                  flush=True)
            os._exit(RESTART_EXIT)

    print(f"[fuzz_cov] {fmt}: {seeded} seeds written, {rec.execs} executions before, {runs} to go",
          file=sys.stderr, flush=True)
    import atexit

    atexit.register(rec.write)
    argv = [sys.argv[0], str(corpus), f"-runs={runs}", f"-timeout={timeout}", f"-max_len={max_len}",
            f"-rss_limit_mb={mem_mb * 2}", "-print_final_stats=1", "-reload=0",
            f"-artifact_prefix={out / 'artifacts' / fmt}-"] + ([f"-max_total_time={seconds}"] if seconds > 0 else [])
    (out / "artifacts").mkdir(parents=True, exist_ok=True)
    atheris.Setup(argv, test_one_input)
    atheris.Fuzz()


# ------------------------------------------------------------------------------------ coverage
def executable_lines(path: Path) -> set[int]:
    code = compile(path.read_text(), str(path), "exec")
    lines, stack = set(), [code]
    while stack:
        c = stack.pop()
        lines.update(ln for _s, _e, ln in c.co_lines() if ln is not None)
        stack.extend(k for k in c.co_consts if hasattr(k, "co_lines"))
    return lines


def line_coverage(fmt: str, files: list[Path]) -> dict:
    """Lines of the format's module reached by replaying ``files`` (run in a child process)."""
    fuzz = _load_fuzz()
    _bases, parse, fix = targets(fuzz)[fmt]
    if fmt not in MODULES and fmt != "grid":
        return {"module": None, "lines": 0, "hit": 0, "files": len(files)}
    module = (ROOT / MODULES[fmt]).resolve() if fmt != "grid" else None
    if fmt == "grid":
        module = Path(_grid_module().__file__).resolve()
    target = str(module)
    hit: set[int] = set()

    def tracer(frame, event, arg):
        if frame.f_code.co_filename != target:
            return None

        def local(frame, event, arg):
            if event == "line":
                hit.add(frame.f_lineno)
            return local
        hit.add(frame.f_lineno)
        return local

    workdir = Path("/tmp") / f"fuzz-cov-replay-{os.getpid()}"
    workdir.mkdir(exist_ok=True)
    sys.settrace(tracer)
    try:
        for f in files:
            parts = split_parts(f.read_bytes())
            for ps in (parts, fix(list(parts)) if fix else None):
                if ps is None:
                    continue
                try:
                    parse(ps, workdir)
                except Exception:  # noqa: BLE001 - only the lines reached matter here
                    pass
    finally:
        sys.settrace(None)
    lines = executable_lines(module)
    return {"module": MODULES.get(fmt), "lines": len(lines), "hit": len(hit & lines), "files": len(files)}


# ------------------------------------------------------------------------------------ parent
RESTART_EXIT = 75  # a worker that grew and asks to be started again (not a finding)
LIBFUZZER_STAT = re.compile(r"#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)")


def run_format(fmt: str, args, out: Path) -> dict:
    """Run the worker until ``--runs`` executions are done (restarting it after a hang or a death)."""
    log = out / fmt / "fuzz.log"
    (out / fmt).mkdir(parents=True, exist_ok=True)
    stats_path = out / fmt / "stats.json"
    start = json.loads(stats_path.read_text())["execs"] if stats_path.exists() else 0
    goal = max(args.runs, start)  # --runs counts every execution of this --out's format: a rerun resumes
    restarts, last, stopped = [], None, None
    t0 = time.time()
    deadline = t0 + args.max_seconds if args.max_seconds else None
    while True:
        done = json.loads(stats_path.read_text())["execs"] if stats_path.exists() else 0
        if done >= goal or sum(r["exit"] != RESTART_EXIT for r in restarts) > args.max_restarts:
            break
        left = int(deadline - time.time()) if deadline else 0
        if deadline and left < 60:   # a worker takes some seconds to start: not worth it
            stopped = f"--max-seconds {args.max_seconds} reached after {done:,} of {goal:,} executions"
            break
        cmd = [sys.executable, __file__, "--worker", fmt, "--runs", str(goal - done), "--out", str(out),
               "--mem-mb", str(args.mem_mb), "--timeout", str(args.timeout), "--max-len", str(args.max_len),
               "--worker-seconds", str(left)]
        with open(log, "a") as f:
            rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT)
        text = log.read_text(errors="replace")
        stats = LIBFUZZER_STAT.findall(text)
        if stats:
            last = stats[-1]
        after = json.loads(stats_path.read_text())["execs"] if stats_path.exists() else 0
        if rc != 0 and after == done and any(r["at_exec"] == done for r in restarts):
            restarts.append({"exit": rc, "why": "no progress twice: stopped", "at_exec": done})
            break
        if rc == RESTART_EXIT:
            restarts.append({"exit": rc, "why": "worker grew: restarted", "at_exec": done})
            continue
        if rc != 0:
            tail = [ln for ln in text.splitlines() if "ERROR: libFuzzer" in ln or "==ERROR" in ln][-1:]
            restarts.append({"exit": rc, "why": tail[0] if tail else "", "at_exec": done})
    stats = json.loads(stats_path.read_text()) if stats_path.exists() else {"execs": 0}
    corpus = sorted((out / "corpus" / fmt).iterdir())
    seeds = [p for p in corpus if p.name.startswith("seed-")]
    cov = {}
    for label, files in (("seeds", seeds), ("corpus", corpus)):
        r = subprocess.run([sys.executable, __file__, "--line-coverage", fmt, "--out", str(out),
                            "--files-from", "-"], input="\n".join(map(str, files)), capture_output=True,
                           text=True, cwd=ROOT)
        cov[label] = json.loads(r.stdout) if r.returncode == 0 else {"error": r.stderr[-500:]}
    return {"format": fmt, "execs": stats["execs"], "execs_this_run": stats["execs"] - start,
            "seconds": round(time.time() - t0, 1), "outcomes": stats.get("outcomes", {}),
            "findings": stats.get("findings", {}), "restarts": restarts, "stopped": stopped,
            "libfuzzer": dict(zip(("execs", "cov", "ft", "corpus"), map(int, last))) if last else None,
            "corpus_files": len(corpus), "line_coverage": cov,
            "artifacts": sorted(p.name for p in (out / "artifacts").glob(f"{fmt}-*"))}


def table(rows) -> str:
    head = f"{'format':7} {'execs':>10} {'exec/s':>7} {'cov':>6} {'ft':>6} {'corpus':>6} {'lines seeds':>12} " \
           f"{'lines fuzzed':>12} {'of':>5}  findings"
    out = [head]
    for r in rows:
        lf = r["libfuzzer"] or {}
        lc = r["line_coverage"]
        s, c = lc.get("seeds", {}), lc.get("corpus", {})
        finds = ", ".join(f"{v['outcome']} x{v['count']}" for v in r["findings"].values()) or "none"
        if r["restarts"]:
            finds += f"; {len(r['restarts'])} restart(s)"
        rate = r["execs_this_run"] / r["seconds"] if r["seconds"] else 0
        name = f"{r['format']}#{r['shard']}" if "shard" in r else r["format"]
        out.append(f"{name:7} {r['execs']:>10,} {rate:>7.0f} {lf.get('cov', 0):>6} {lf.get('ft', 0):>6} "
                   f"{r['corpus_files']:>6} {s.get('hit', 0):>12} {c.get('hit', 0):>12} {c.get('lines', 0):>5}  "
                   f"{finds}")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--formats", default="all", help="comma-separated, or all (" + ",".join(MODULES) + ", and any "
                    "format fuzz.py adds)")
    ap.add_argument("--runs", type=int, default=100_000,
                    help="executions per format in all (default 100,000); a run on the same --out resumes "
                         "its corpus and counts")
    ap.add_argument("--out", type=Path, required=True, help="corpus, crashes, logs and fuzz_cov.json go here")
    ap.add_argument("--jobs", type=int, default=1, help="formats fuzzed at once (one process each)")
    ap.add_argument("--mem-mb", type=int, default=1024, help="address-space headroom per worker")
    ap.add_argument("--timeout", type=int, default=30, help="seconds one input may take (libFuzzer -timeout)")
    ap.add_argument("--max-len", type=int, default=1 << 20, help="largest input libFuzzer makes (bytes)")
    ap.add_argument("--max-restarts", type=int, default=20)
    ap.add_argument("--shards", type=int, default=1,
                    help="processes fuzzing one format at once, each with its own corpus under DIR/shard-NN "
                         "seeded alike and --runs / N executions; DIR/fuzz_cov.json sums them")
    ap.add_argument("--max-seconds", type=int, default=0,
                    help="stop each format (or shard) after this many seconds, runs done or not (0: no limit)")
    ap.add_argument("--worker-seconds", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--line-coverage", help=argparse.SUPPRESS)
    ap.add_argument("--files-from", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    out = args.out.resolve()
    if args.worker:
        worker(args.worker, args.runs, out, args.mem_mb, args.timeout, args.max_len, args.worker_seconds)
        return 0
    if args.line_coverage:
        files = [Path(ln) for ln in sys.stdin.read().splitlines() if ln]
        print(json.dumps(line_coverage(args.line_coverage, files)))
        return 0
    if importlib.util.find_spec("atheris") is None:
        print("error: atheris is not installed (pip install -e '.[fuzz]')", file=sys.stderr)
        return 2
    known = list(targets(_load_fuzz()))
    names = known if args.formats == "all" else [f.strip() for f in args.formats.split(",") if f.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"error: unknown format(s) {', '.join(unknown)}; choose from {', '.join(known)}", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    from concurrent.futures import ThreadPoolExecutor

    started = time.time()
    if args.shards > 1:
        if len(names) != 1:
            print("error: --shards fuzzes one format (--formats NAME)", file=sys.stderr)
            return 2
        per = -(-args.runs // args.shards)
        shard_args = argparse.Namespace(**{**vars(args), "runs": per})
        with ThreadPoolExecutor(max_workers=args.shards) as pool:
            rows = list(pool.map(lambda k: {**run_format(names[0], shard_args, out / f"shard-{k:02d}"), "shard": k},
                                 range(args.shards)))
        total = sharded_total(names[0], rows, out, time.time() - started)
    else:
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            rows = list(pool.map(lambda f: run_format(f, args, out), names))
        total = None
    summary_path = out / "fuzz_cov.json"
    old = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    old.setdefault("runs", []).append({"argv": sys.argv, "rows": rows, "total": total, "cpus": os.cpu_count(),
                                       "finished": time.strftime("%Y-%m-%d %H:%M:%S")})
    summary_path.write_text(json.dumps(old, indent=1))
    print(table(rows))
    if total:
        print(f"total   {total['execs']:>10,} executions in {total['seconds']:.0f} s over {total['shards']} processes; "
              f"cov max {total['cov_max']}, ft max {total['ft_max']}; lines (seeds -> fuzzed, all shards) "
              f"{total['line_coverage'].get('seeds', {}).get('hit', 0)} -> "
              f"{total['line_coverage'].get('corpus', {}).get('hit', 0)} / "
              f"{total['line_coverage'].get('corpus', {}).get('lines', 0)}; findings: "
              f"{', '.join(f'{k} x{v}' for k, v in total['findings'].items()) or 'none'}")
    return 1 if any(r["findings"] for r in rows) else 0


def sharded_total(fmt: str, rows, out: Path, seconds: float) -> dict:
    """The shards summed: executions, outcomes, findings by place, libFuzzer's best edge and
    feature counts, and the line coverage of all the shards' corpora replayed together."""
    outcomes: dict[str, int] = {}
    findings: dict[str, int] = {}
    for r in rows:
        for k, v in r["outcomes"].items():
            outcomes[k] = outcomes.get(k, 0) + v
        for sig, f in r["findings"].items():
            findings[sig] = findings.get(sig, 0) + f["count"]
    corpus = sorted(p for k in range(len(rows)) for p in (out / f"shard-{k:02d}" / "corpus" / fmt).iterdir())
    seeds = sorted((out / "shard-00" / "corpus" / fmt).glob("seed-*"))
    cov = {}
    for label, files in (("seeds", seeds), ("corpus", corpus)):
        r = subprocess.run([sys.executable, __file__, "--line-coverage", fmt, "--out", str(out), "--files-from", "-"],
                           input="\n".join(map(str, files)), capture_output=True, text=True, cwd=ROOT)
        cov[label] = json.loads(r.stdout) if r.returncode == 0 else {"error": r.stderr[-500:]}
    lf = [r["libfuzzer"] or {} for r in rows]
    return {"format": fmt, "shards": len(rows), "execs": sum(r["execs"] for r in rows),
            "execs_per_shard": [r["execs"] for r in rows], "seconds": round(seconds, 1), "outcomes": outcomes,
            "findings": findings, "cov_max": max((x.get("cov", 0) for x in lf), default=0),
            "ft_max": max((x.get("ft", 0) for x in lf), default=0), "corpus_files": len(corpus),
            "restarts": sum(len(r["restarts"]) for r in rows), "line_coverage": cov}


if __name__ == "__main__":
    sys.exit(main())
