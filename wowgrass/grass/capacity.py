"""The clients' draw capacity: which placements of the scatter a chunk actually draws (client.md §4).

``--placement client`` reproduces what the clients scatter; their draw side then keeps only part
of it, and what it keeps depends on the scatter order and on the models' geometry:

* 3.3.5 ([C] noggit-cinder ``DetailDoodadRender.cpp``, the client's ``CDetailDoodadInst::AddDoodad``
  @0x7B31E0; [F]): a chunk has at most four batches. The placements come in scatter order (cell
  pick by cell pick, doodad by doodad); each goes into the first open batch of its model's texture
  whose vertex count and index count both stay strictly below ``min(picks * 64, 4096)`` after
  adding the model's; failing that, it opens a new batch (of its texture) while fewer than four
  are open; failing that, it is dropped. A model's texture is the one of its first batch (the
  submesh with the lowest index start), its vertex and index counts that submesh's.
* 1.12 / 2.4.3 ([B] benilla ``ground_effects.rs``): the decode describes no texture batches; the
  one limit it names is the detail-doodad instance count ``frillDensity << 6``, capped at 8192
  (``0x6b1d4b``). It is applied per chunk, in scatter order (the decode does not say over what
  it counts: a chunk is the unit the client builds its doodads for).

Where a model file is missing its texture and counts are unknown: each missing model counts as
a texture of its own with no vertices (so it takes a batch but never fills one); the bake says so.

Pure numpy on the placements' chunk and model arrays (scatter order); no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: 3.3.5: batches a chunk keeps and the most vertices / indices one batch holds
BATCHES_335 = 4
BUDGET_MAX_335 = 4096
#: 1.12: the instance count's cap (0x2000)
INSTANCES_MAX_112 = 8192


@dataclass(frozen=True)
class ModelGeometry:
    """What the capacity needs of one model: its texture's key and its first submesh's counts."""

    texture: str  # a texture file name (lower case, backslashes), or a key of the model's own
    vertex_count: int = 0
    index_count: int = 0
    known: bool = True  # False: the model is missing (a texture of its own, no vertices)

    def to_list(self) -> list:
        return [self.texture, int(self.vertex_count), int(self.index_count), bool(self.known)]


def missing_geometry(path: str) -> ModelGeometry:
    """A missing model: a texture of its own (keyed by its path), no vertices or indices."""
    return ModelGeometry(f"<missing model {path.lower()}>", 0, 0, False)


def model_geometry(model, path: str) -> ModelGeometry:
    """The texture and counts the 3.3.5 client's detail doodads take from a parsed
    :class:`~wowgrass.formats.m2.M2Model`: its first batch by index start. A model without a view,
    a batch or a texture file is a texture of its own (keyed by its path)."""
    view = getattr(model, "view", None)
    own = f"<model {path.lower()}>"
    if view is None or not len(view.batches) or not len(view.submeshes):
        return ModelGeometry(own, 0, 0, True)
    starts = [model.submesh_range(int(b["submesh"]))[0] for b in view.batches]
    batch = view.batches[int(np.argmin(starts))]
    sub = view.submeshes[int(batch["submesh"])]
    tex = model.batch_texture(batch)
    name = tex.filename.replace("/", "\\").lower() if tex is not None and tex.filename else None
    if name is None:
        name = f"<model {path.lower()}: texture type {tex.type if tex is not None else -1}>"
    return ModelGeometry(name, int(sub["vertex_count"]), int(sub["index_count"]), True)


def budget_335(picks: int) -> int:
    """Vertices and indices one 3.3.5 batch stays strictly below: ``min(picks * 64, 4096)``."""
    return min(int(picks) * 64, BUDGET_MAX_335)


def _ranks(chunk: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The order that groups placements by chunk (stable: scatter order within), and each
    placement's rank inside its chunk, in that order."""
    order = np.argsort(chunk, kind="stable")
    sc = chunk[order].astype(np.int64)
    first = np.concatenate(([0], np.cumsum(np.bincount(sc, minlength=256))))
    return order, np.arange(sc.size, dtype=np.int64) - first[sc]


def draw_capacity(chunk, model, geometry, picks: int, wotlk: bool) -> np.ndarray:
    """(n,) bool: the placements (``chunk`` and ``model`` per placement, in scatter order) the
    client draws. ``geometry[m]`` is the :class:`ModelGeometry` of model index ``m`` (3.3.5 only);
    ``picks`` the cell picks the scatter took (the CVar)."""
    chunk = np.asarray(chunk).reshape(-1)
    model = np.asarray(model, dtype=np.int64).reshape(-1)
    n = chunk.size
    keep = np.zeros(n, dtype=bool)
    if n == 0:
        return keep
    order, rank = _ranks(chunk)
    if not wotlk:
        keep[order] = rank < min(int(picks) << 6, INSTANCES_MAX_112)
        return keep
    # per model: a texture number and the counts it adds to a batch
    used = np.unique(model)
    keys: dict[str, int] = {}
    tex_of = np.zeros(int(used.max()) + 1, np.int64)
    vtx_of = np.zeros_like(tex_of)
    idx_of = np.zeros_like(tex_of)
    for m in used.tolist():
        g = geometry[m]
        tex_of[m] = keys.setdefault(g.texture, len(keys))
        vtx_of[m], idx_of[m] = g.vertex_count, g.index_count
    m_sorted = model[order]
    tex, vtx, idx = tex_of[m_sorted], vtx_of[m_sorted], idx_of[m_sorted]
    ch = chunk[order].astype(np.int64)
    budget = budget_335(picks)
    if _fits_without_filling(ch, tex, vtx, idx, budget):
        # no batch ever fills: a chunk keeps its first four textures (by first appearance)
        key = ch * len(keys) + tex
        _, first = np.unique(key, return_index=True)
        opened = np.zeros(n, np.int64)
        opened[first] = 1
        starts = np.concatenate(([0], np.cumsum(np.bincount(ch, minlength=256))))
        cum = np.cumsum(opened)
        before = np.concatenate(([0], cum))[starts[:-1]][ch]
        tex_rank = np.zeros(len(keys) * 256, np.int64)
        tex_rank[key[first]] = (cum - before)[first]  # 1 for a chunk's first texture
        keep[order] = tex_rank[key] <= BATCHES_335
        return keep
    keep[order] = _fill_batches(ch, rank, tex, vtx, idx, budget)
    return keep


def _fits_without_filling(ch, tex, vtx, idx, budget) -> bool:
    """True when no texture of any chunk gathers ``budget`` vertices or indices in all: then no
    batch is ever full and only the number of textures decides."""
    key = ch * (int(tex.max()) + 1) + tex
    for counts in (vtx, idx):
        if counts.any() and np.bincount(key, weights=counts).max() >= budget:
            return False
    return True


def _fill_batches(ch, rank, tex, vtx, idx, budget) -> np.ndarray:
    """The batches filled in scatter order, every chunk at once: step k takes the k-th placement
    of each chunk that has one (placements grouped by chunk, ``rank`` their place in it)."""
    n = ch.size
    keep = np.zeros(n, dtype=bool)
    btex = np.full((256, BATCHES_335), -1, np.int64)
    bvtx = np.zeros((256, BATCHES_335), np.int64)
    bidx = np.zeros((256, BATCHES_335), np.int64)
    by_rank = np.argsort(rank, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(np.bincount(rank, minlength=int(rank.max()) + 1))))
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        g = by_rank[lo:hi]
        c, t, v, i = ch[g], tex[g], vtx[g], idx[g]
        room = (btex[c] == t[:, None]) & (bvtx[c] + v[:, None] < budget) & (bidx[c] + i[:, None] < budget)
        empty = btex[c] < 0
        use = np.where(room.any(axis=1), room.argmax(axis=1), np.where(empty.any(axis=1), empty.argmax(axis=1), -1))
        ok = use >= 0
        c, t, v, i, b = c[ok], t[ok], v[ok], i[ok], use[ok]
        btex[c, b] = t
        bvtx[c, b] += v
        bidx[c, b] += i
        keep[g[ok]] = True
    return keep
