"""Full disks and read-only places (issue 27): every output turns ENOSPC, EROFS and EACCES into one
``error: cannot write PATH: ...`` line and exit status 2, and leaves neither a partial file nor a
temporary one; a cache folder that cannot be written is reported once and the run goes on without
caching where it can (bake, whose output is the cache, fails).

The errors are injected at the calls wowgrass's writes go through (tests/faults.py), so the tests run
as root too; the last tests repeat the issue's reproduction on a real 256 KiB tmpfs and a read-only
mount where this process may mount one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from faults import ERRNOS, failing_folder, reset_cache_state, tree
from wowgrass.cli.main import cli

REASON = {"ENOSPC": "no space left on the device", "EROFS": "read-only file system", "EACCES": "permission denied"}


def run(*args, env=None):
    return CliRunner().invoke(cli, [str(a) for a in args], env=env)


@pytest.fixture(autouse=True)
def _fresh_cache_state():
    reset_cache_state()
    yield
    reset_cache_state()


@pytest.fixture(scope="module")
def loose(tmp_path_factory):
    """The sample world's files extracted loose, and one of its tiles baked to a bundle."""
    from wowgrass.samples import build_sample_world

    root = tmp_path_factory.mktemp("faults-loose")
    data = build_sample_world(root / "w")
    assert run("mpq", "extract", "--data", data, "-o", root / "x").exit_code == 0
    x = root / "x"
    adt = sorted((x / "World" / "Maps" / "WowgrassSample").glob("*.adt"))[0]
    bundle = root / "tile.wgb"
    assert run("bake", adt, "--data", data, "-o", bundle).exit_code == 0
    return {"data": data, "x": x, "adt": adt, "bundle": bundle, "archive": sorted(data.glob("*.MPQ"))[0],
            "dbc": x / "DBFilesClient" / "GroundEffectTexture.dbc",
            "m2": "World\\NoDXT\\Detail\\ElwGra01.m2", "blp": x / "World" / "NoDXT" / "Detail" / "ElwGra01.blp"}


#: name -> (argv given the loose files and the output folder, the path the error must name)
COMMANDS = {
    "sample build": (lambda f, o: ["sample", "build", "--size", "1x1", "-o", o / "world"], "world"),
    "export gltf": (lambda f, o: ["export", "gltf", "--data", f["data"], "--tile", "31,31", "-o", o / "z.glb"],
                    "z.glb"),
    "bake -o": (lambda f, o: ["bake", f["adt"], "--data", f["data"], "-o", o / "t.wgb"], "t.wgb"),
    "bundle export": (lambda f, o: ["bundle", "export", f["bundle"], "-o", o / "rows.csv"], "rows.csv"),
    "mpq extract": (lambda f, o: ["mpq", "extract", f["archive"], "-o", o / "ex"], "ex"),
    "adt image (PNG)": (lambda f, o: ["adt", "image", f["adt"], "--size", "64", "-o", o / "t.png"], "t.png"),
    "dbc dump": (lambda f, o: ["dbc", "dump", f["dbc"], "-o", o / "t.csv"], "t.csv"),
    "blp convert (PNG)": (lambda f, o: ["blp", "convert", f["blp"], o / "b.png"], "b.png"),
    "m2 export": (lambda f, o: ["m2", "export", f["m2"], "--data", f["data"], "-o", o / "m.glb"], "m.glb"),
    "effects new-set": (lambda f, o: ["effects", "new-set", "--data", f["data"], "--doodad", "ElwGra01", "-o", o],
                        "DBFilesClient/GroundEffectTexture.dbc"),
    "patch build": (lambda f, o: ["patch", "build", f["x"] / "DBFilesClient", "-o", o / "patch-4.MPQ"],
                    "patch-4.MPQ"),
}


@pytest.mark.parametrize("fault", list(ERRNOS))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_output_faults_are_one_error_line_and_leave_nothing(loose, tmp_path, command, fault):
    argv, named = COMMANDS[command]
    out = tmp_path / "out"
    out.mkdir()
    with failing_folder(out, fault):
        res = run(*argv(loose, out))
    assert res.exit_code == 2, (res.exit_code, res.output, res.exception)
    assert "Traceback" not in res.output
    errors = [ln for ln in res.output.splitlines() if ln.startswith("error:")]
    assert errors, res.output
    assert f"cannot write {out / named}" in errors[0] or f"cannot write {out}" in errors[0], errors
    assert REASON[fault] in errors[0], errors
    left = tree(out)
    if command == "mpq extract":  # the folders of the names it was extracting may stay, empty
        left = [p for p in left if (out / p).is_file()]
    assert left == [], left      # no partial file, no temporary one, no half-made folder


@pytest.mark.parametrize("fault", ["ENOSPC", "EROFS"])
def test_view_png_on_a_full_or_read_only_place(egl, loose, tmp_path, fault):
    out = tmp_path / "out"
    out.mkdir()
    with failing_folder(out, fault):
        res = run("view", "--data", loose["data"], "--output", out / "v.png", "--size", "96x54", "--camera", "60,60",
                  "--frames", "1")
    assert res.exit_code == 2, (res.output, res.exception)
    assert f"error: cannot write {out / 'v.png'}: {REASON[fault]}" in res.output, res.output
    assert tree(out) == []


def test_a_failed_write_keeps_the_old_file(tmp_path):
    from wowgrass.errors import OutputError
    from wowgrass.fileio import write_atomic

    target = tmp_path / "a.bin"
    write_atomic(target, b"old contents")
    with failing_folder(tmp_path, "ENOSPC"), pytest.raises(OutputError) as err:
        write_atomic(target, b"new" * 1000)
    assert err.value.errno == ERRNOS["ENOSPC"] and err.value.filename == str(target)
    assert target.read_bytes() == b"old contents"
    assert tree(tmp_path) == ["a.bin"]


def test_a_sample_world_that_cannot_be_written_keeps_the_old_one(tmp_path):
    assert run("sample", "build", "--size", "1x1", "-o", tmp_path / "w").exit_code == 0
    before = {p: (tmp_path / "w" / p).read_bytes() for p in tree(tmp_path / "w") if (tmp_path / "w" / p).is_file()}
    with failing_folder(tmp_path / "w", "ENOSPC"):
        res = run("sample", "build", "--size", "1x1", "--seed", "3", "--force", "-o", tmp_path / "w")
    assert res.exit_code == 2 and "no space left" in res.output
    after = {p: (tmp_path / "w" / p).read_bytes() for p in tree(tmp_path / "w") if (tmp_path / "w" / p).is_file()}
    assert after == before


@pytest.mark.parametrize("fault", ["EROFS", "EACCES"])
def test_a_read_only_cache_is_reported_once_and_the_export_goes_on(loose, tmp_path, monkeypatch, caplog, fault):
    cache = tmp_path / "cache"
    monkeypatch.setenv("WOWGRASS_CACHE", str(cache))
    with failing_folder(cache, fault):
        res = run("export", "gltf", "--data", loose["data"], "--tile", "31,31", "-o", tmp_path / "z.glb")
    assert res.exit_code == 0, res.output
    said = [r.getMessage() for r in caplog.records if f"cannot write {cache}" in r.getMessage()]
    assert len(said) == 1 and "without a cache" in said[0] and REASON[fault] in said[0], said   # reported once
    assert (tmp_path / "z.glb").stat().st_size > 1000
    assert tree(cache) == []


def test_a_read_only_cache_still_gives_the_sample_world(tmp_path, monkeypatch, caplog):
    cache = tmp_path / "cache"
    monkeypatch.setenv("WOWGRASS_CACHE", str(cache))
    with failing_folder(cache, "EROFS"):
        res = run("maps")   # no --data: the sample world, built for this run only
    assert res.exit_code == 0, res.output
    assert "WowgrassSample" in res.output
    assert sum("read-only file system" in r.getMessage() for r in caplog.records) == 1
    assert tree(cache) == []


@pytest.mark.parametrize("fault", list(ERRNOS))
def test_bake_into_a_cache_that_cannot_be_written_is_an_error(loose, tmp_path, monkeypatch, fault):
    cache = tmp_path / "cache"
    monkeypatch.setenv("WOWGRASS_CACHE", str(cache))
    with failing_folder(cache, fault):
        res = run("bake", "--data", loose["data"], "--jobs", "1")
    assert res.exit_code == 2, res.output
    assert res.output.count("error:") == 1 and REASON[fault] in res.output and str(cache) in res.output, res.output
    assert not any(p.endswith((".tmp", ".wgb")) for p in tree(cache)), tree(cache)


# ------------------------------------------------------------------------- real mounts (root only)
def _mount(path: Path, *opts) -> bool:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    path.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(("size=256k",) + opts), "tmpfs", str(path)],
                       capture_output=True)
    return r.returncode == 0


def _cli(*args, env=None):
    e = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-m", "wowgrass", *map(str, args)], capture_output=True, text=True,
                          env=e, timeout=300)


@pytest.fixture
def tiny_tmpfs(tmp_path):
    mnt = tmp_path / "mnt"
    if not _mount(mnt):
        pytest.skip("cannot mount a tmpfs here (needs root and mount)")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_real_full_disk_and_read_only_mount(loose, tiny_tmpfs):
    """The issue's reproduction: sample build and export gltf on a 256 KiB tmpfs, then read-only."""
    data = loose["data"]
    for mode in ("full", "read-only"):
        if mode == "read-only":
            subprocess.run(["mount", "-o", "remount,ro", str(tiny_tmpfs)], check=True)
        for argv, named in ((["sample", "build", "-o", tiny_tmpfs / "world"], "world"),
                            (["export", "gltf", "--data", data, "-o", tiny_tmpfs / "x.glb"], "x.glb")):
            out = _cli(*argv)
            assert out.returncode == 2, (mode, out.returncode, out.stderr[-1500:])
            assert out.stderr.startswith(f"error: cannot write {tiny_tmpfs / named}"), (mode, out.stderr)
            reason = REASON["ENOSPC"] if mode == "full" else REASON["EROFS"]
            assert reason in out.stderr and "Traceback" not in out.stderr
            assert tree(tiny_tmpfs) == [], tree(tiny_tmpfs)
    # a read-only cache: reported once, the view of the zone's export still made
    out = _cli("export", "gltf", "--data", data, "--tile", "31,31", "-o", tiny_tmpfs.parent / "z.glb",
               env={"WOWGRASS_CACHE": str(tiny_tmpfs / "cache")})
    assert out.returncode == 0 and out.stderr.count("read-only file system") == 1, out.stderr
    assert (tiny_tmpfs.parent / "z.glb").stat().st_size > 1000


def test_a_map_bake_into_a_full_tmpfs_cache(loose, tiny_tmpfs):
    """A map's bake writes its bundles past the page cache where it can (tmpfs takes O_DIRECT
    since Linux 6.6): a full disk is still one error naming the cache, and nothing is left."""
    cache = tiny_tmpfs / "cache"
    out = _cli("bake", "--data", loose["data"], "--jobs", "1", env={"WOWGRASS_CACHE": str(cache)})
    assert out.returncode == 2, (out.returncode, out.stderr[-1500:])
    assert out.stderr.count("error:") == 1 and REASON["ENOSPC"] in out.stderr and str(cache) in out.stderr
    assert "Traceback" not in out.stderr
    assert not any(p.endswith((".tmp", ".wgb")) for p in tree(cache)), tree(cache)


def test_a_world_set_aside_by_a_killed_build_comes_back(tmp_path):
    """Killed between moving the old Data aside and renaming the new one in: the next build (even
    one that fails) puts the old world back first."""
    import subprocess as sp

    from wowgrass.samples import write_sample_world

    w = tmp_path / "w"
    write_sample_world(w, tiles=(1, 1))
    before = {p: (w / p).read_bytes() for p in tree(w) if (w / p).is_file()}
    dead = sp.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    os.replace(w / "Data", w / f".tmp-{dead.pid}-old-Data")
    from wowgrass.errors import OutputError

    with failing_folder(w, "ENOSPC"), pytest.raises(OutputError):   # the next build fails: full disk
        write_sample_world(w, tiles=(1, 1), seed=5)
    assert {p: (w / p).read_bytes() for p in tree(w) if (w / p).is_file()} == before


def test_an_obj_export_that_fails_half_way_takes_back_its_files(loose, tmp_path, monkeypatch):
    """The .obj and PNGs are written, then the .mtl meets a full disk: none of the set is left."""
    import errno

    from wowgrass import fileio

    real = fileio.write_atomic

    def full_at_mtl(path, data, **kw):
        if str(path).endswith(".mtl"):
            raise fileio.OutputError(path, errno.ENOSPC)
        return real(path, data, **kw)

    monkeypatch.setattr(fileio, "write_atomic", full_at_mtl)
    res = run("m2", "export", loose["m2"], "--data", loose["data"], "-o", tmp_path / "m.obj")
    assert res.exit_code == 2 and "no space left" in res.output, res.output
    assert tree(tmp_path) == []
