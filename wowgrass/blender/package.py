"""``make blender-extension``: the Blender 4.2+ extension zip (blender_manifest.toml, the add-on's
``__init__.py`` from ``extension/``, and wheels of wowgrass and platformdirs, so it installs
offline; numpy is Blender's own, and nothing on the add-on's path imports moderngl, glfw,
pygltflib or Pillow)."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WHEELS = ("platformdirs",)   # wowgrass's pure-Python dependencies on the add-on's path


def build_zip(out: Path, version: str | None = None) -> Path:
    """Build the wheels (pip, ordinary client) and write the extension zip atomically."""
    from wowgrass import __version__
    from wowgrass.fileio import write_atomic

    version = version or __version__
    with tempfile.TemporaryDirectory() as tmp:
        wdir = Path(tmp) / "wheels"
        proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wdir), str(ROOT),
                               *WHEELS], capture_output=True, text=True)
        if proc.returncode:   # setuptools' chatter only where the build failed
            raise SystemExit(f"error: pip wheel failed:\n{proc.stdout[-2000:]}{proc.stderr[-4000:]}")
        wheels = sorted(p.name for p in wdir.glob("*.whl"))
        manifest = (ROOT / "extension" / "blender_manifest.toml").read_text()
        manifest = manifest.replace("@VERSION@", version).replace(
            "@WHEELS@", "\n".join(f'    "./wheels/{w}",' for w in wheels))
        zpath = Path(tmp) / "ext.zip"
        with zipfile.ZipFile(zpath, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("blender_manifest.toml", manifest)
            z.write(ROOT / "extension" / "__init__.py", "__init__.py")
            for w in wheels:
                z.write(wdir / w, f"wheels/{w}")
        write_atomic(out, zpath.read_bytes())
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", default=str(ROOT / "dist" / "wowgrass-blender.zip"))
    args = ap.parse_args(argv)
    out = build_zip(Path(args.output))
    print(f"{out}: {out.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
