"""Repaint a tile as a map editor does, for trying ground-effect rules (docs/rules.md).

``python docs/recipes/repaint_like_an_editor.py TILE.adt [--seed N]`` rewrites TILE.adt in place,
saved by wowgrass's own ADT writer (so in another layout than the input, as an editor's save is):
the road painted across some chunks as a new layer without an effect id, the grass layers'
effect ids cleared, every alpha map moved a few texels (so doodadMapping goes stale), and the
noEffectDoodad bits dropped, as a careless repaint leaves them.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np

from wowgrass.edit.adt_edit import read_tile
from wowgrass.formats.adt import alpha_encodings, write_adt


def repaint(raw: bytes, seed: int = 0) -> bytes:
    t = read_tile(raw)
    n = t.n_layers.astype(np.int64).copy()
    tex, eff, flags, alpha = t.layer_texture.copy(), t.layer_effect.copy(), t.layer_flags.copy(), t.alpha.copy()
    names = [x.lower() for x in t.textures]
    road = next(i for i, x in enumerate(names) if "road" in x)
    grass = [i for i, x in enumerate(names) if "grass" in x]
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:64, 0:64]
    for i in rng.permutation(256)[:60]:            # a new road across these chunks: no effect id
        if n[i] < 4:
            k = n[i]
            tex[i, k], eff[i, k], flags[i, k] = road, 0, flags[i, 1] if n[i] > 1 else 0x100
            alpha[i, k] = np.where(np.abs(xx - yy) < 9, 255, 0).astype(np.uint8)
            n[i] += 1
    eff[np.isin(tex, grass)] = 0                   # the grass re-textured: its effect ids gone
    alpha[:, 1:] = np.roll(alpha[:, 1:], 6, axis=-1)
    out = dataclasses.replace(t, n_layers=n.astype(t.n_layers.dtype), layer_texture=tex, layer_effect=eff,
                              layer_flags=flags, alpha=alpha,
                              alpha_encoding=alpha_encodings(flags, n, t.big_alpha).astype(t.alpha_encoding.dtype),
                              no_effect_doodad=np.zeros_like(t.no_effect_doodad))
    return write_adt(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tile", type=Path)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    a.tile.write_bytes(repaint(a.tile.read_bytes(), a.seed))


if __name__ == "__main__":
    main()
