"""Issue 33 item 16: the coverage-guided ADT target's corpus carries the liquid and wmo targets' seeds
(benchmarks/fuzz_cov.py; atheris itself is not needed to build the seeds)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _fuzz_cov():
    spec = importlib.util.spec_from_file_location("fuzz_cov_under_test", ROOT / "benchmarks" / "fuzz_cov.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_adt_seeds_carry_the_liquid_and_wmo_seeds(tmp_path):
    from wowgrass.formats.adt import AdtTile
    from wowgrass.formats.liquid import tile_liquid
    from wowgrass.game.mapobjects import modf_placements

    fc = _fuzz_cov()
    bases, parse, _fix = fc.targets(fc._load_fuzz())["adt"]
    seeds = dict(bases())
    for label in ("sample-3.3.5-liquid-wmo", "sample-1.12-liquid-wmo"):
        data = seeds[label][0]
        parse((data,), tmp_path)                      # the target itself takes it
        try:
            t = AdtTile.from_bytes(data, label, big_alpha=True)
        except Exception:  # noqa: BLE001 - the 1.12 tile has 4-bit alpha
            t = AdtTile.from_bytes(data, label, big_alpha=False)
        s = tile_liquid(t).summary()
        assert {x["kind"] for x in s["types"]} == {"water", "ocean", "magma", "slime"}, (label, s["types"])
        if label.startswith("sample-3.3.5"):
            assert len(s["vertex_formats"]) == 4      # every MH2O vertex format
        p = modf_placements(t)
        assert len(t.modf) == 4 and len(t.wmos) == 2 and sorted(set(p.scale.tolist())) == [1.0, 2.0]
