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
CHUNKS_PER_TILE = 256
NO_TEXTURE = -1  # an open batch slot's texture


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
        return ModelGeometry(own)   # no vertices or indices: it never fills a batch
    starts = [model.submesh_range(int(b["submesh"]))[0] for b in view.batches]
    batch = view.batches[int(np.argmin(starts))]
    sub = view.submeshes[int(batch["submesh"])]
    tex = model.batch_texture(batch)
    name = tex.filename.replace("/", "\\").lower() if tex is not None and tex.filename else None
    if name is None:
        name = f"<model {path.lower()}: texture type {tex.type if tex is not None else -1}>"
    return ModelGeometry(name, int(sub["vertex_count"]), int(sub["index_count"]))


def budget_335(picks: int) -> int:
    """Vertices and indices one 3.3.5 batch stays strictly below: ``min(picks * 64, 4096)``."""
    return min(int(picks) * 64, BUDGET_MAX_335)


def _ranks(chunk: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The order that groups placements by chunk (stable: scatter order within), and each
    placement's rank inside its chunk, in that order."""
    order = np.argsort(chunk, kind="stable")
    sc = chunk[order]
    first = np.concatenate(([0], np.cumsum(np.bincount(sc))))
    return order, np.arange(sc.size) - first[sc]


def draw_capacity(chunk, model, geometry, picks: int, wotlk: bool) -> np.ndarray:
    """(n,) bool: the placements (``chunk`` and ``model`` per placement, in scatter order) the
    client draws. ``geometry[m]`` is the :class:`ModelGeometry` of model index ``m`` (3.3.5 only);
    ``picks`` the cell picks the scatter took (the CVar)."""
    chunk = np.asarray(chunk).ravel()
    model = np.asarray(model).ravel()
    n = chunk.size
    keep = np.zeros(n, dtype=bool)
    if n == 0:
        return keep
    order, rank = _ranks(chunk)
    if not wotlk:
        keep[order] = rank < min(int(picks) << 6, INSTANCES_MAX_112)
        return keep
    # per model index: its texture's key (first come, first numbered) and its counts
    used = np.flatnonzero(np.bincount(model))
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
    fast = _uniform_chunks(ch, tex, vtx, idx)[ch]
    if fast.any():
        keep[order[fast]] = _fill_uniform(ch[fast], tex[fast], np.maximum(vtx, idx)[fast], budget)
    if not fast.all():
        slow = ~fast
        _fill_batches(ch[slow], _ranks(ch[slow])[1], tex[slow], vtx[slow], idx[slow], budget, keep, order[slow])
    return keep


def _chunk_texture_key(ch: np.ndarray, tex: np.ndarray) -> np.ndarray:
    """One sort key per (chunk, texture), ordered by chunk then texture, in the narrowest unsigned
    type (a stable argsort of 16-bit keys is a radix sort)."""
    key = ch * (int(tex.max()) + 1) + tex
    return key.astype(np.min_scalar_type(int(key.max())))


def _uniform_chunks(ch, tex, vtx, idx) -> np.ndarray:
    """(256,) bool: chunks where all placements of a texture add the same vertex and index counts
    (the usual case: a texture per model), which :func:`_fill_uniform` settles without stepping."""
    key = _chunk_texture_key(ch, tex)
    by_key = np.argsort(key)  # any order within a key: all its placements are compared with a neighbour
    sk = key[by_key]
    same_key = sk[1:] == sk[:-1]
    differs = same_key & ((vtx[by_key][1:] != vtx[by_key][:-1]) | (idx[by_key][1:] != idx[by_key][:-1]))
    return np.bincount(ch[by_key][1:][differs], minlength=CHUNKS_PER_TILE) == 0


def _fill_uniform(ch, tex, size, budget) -> np.ndarray:
    """The batches of chunks whose textures each add one ``size`` (the larger of the vertex and index
    counts) a placement, in closed form. A batch of a texture takes ``q = max(1, (budget - 1) // size)``
    placements (no limit for size 0) and opens at every q-th placement of its texture; openings
    succeed while fewer than four batches are open and batches never close, so an opening succeeds
    exactly when it is among the chunk's first four, and a placement is kept when its batch opened
    (a texture's placements after a failed opening all fail: four are open by then). Placements
    grouped by chunk, in scatter order within."""
    n = ch.size
    key = _chunk_texture_key(ch, tex)
    q = np.where(size > 0, np.maximum(1, (budget - 1) // np.maximum(size, 1)), np.iinfo(np.int64).max)
    by_key = np.argsort(key, kind="stable")  # scatter order within each (chunk, texture)
    sk = key[by_key]
    key_first = np.concatenate(([0], np.flatnonzero(sk[1:] != sk[:-1]) + 1))
    first_of = np.repeat(key_first, np.diff(np.concatenate((key_first, [n]))))  # per key-sorted slot
    k = np.empty(n, np.int64)
    k[by_key] = np.arange(n) - first_of  # the placement's index among its texture's in the chunk
    opens = k % q == 0
    chunk_first = np.concatenate(([0], np.cumsum(np.bincount(ch))))[:-1]
    cum = np.cumsum(opens)
    rank = cum - np.concatenate(([0], cum))[chunk_first][ch]  # among the chunk's openings, at an opening
    start = np.empty(n, np.int64)
    start[by_key] = first_of
    opener = by_key[start + (k // q) * q]  # the placement that opened this one's batch
    return rank[opener] <= BATCHES_335


def _fill_batches(ch, rank, tex, vtx, idx, budget, keep, at) -> None:
    """The batches filled in scatter order, every chunk at once: step k takes the k-th placement
    of each chunk that has one (placements grouped by chunk, ``rank`` their place in it); sets
    ``keep[at[i]]`` for each placement ``i`` that finds a batch."""
    btex = np.full((CHUNKS_PER_TILE, BATCHES_335), NO_TEXTURE)
    bvtx = np.zeros_like(btex)
    bidx = np.zeros_like(btex)
    by_rank = np.argsort(rank)  # the order within a rank does not matter: one placement per chunk
    bounds = np.concatenate(([0], np.cumsum(np.bincount(rank))))
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        g = by_rank[lo:hi]
        c, t, v, i = ch[g], tex[g], vtx[g], idx[g]
        room = (btex[c] == t[:, None]) & (bvtx[c] + v[:, None] < budget) & (bidx[c] + i[:, None] < budget)
        empty = btex[c] == NO_TEXTURE
        has_room = room.any(axis=1)
        ok = has_room | empty.any(axis=1)
        use = np.where(has_room, room.argmax(axis=1), empty.argmax(axis=1))
        c, t, v, i, b = c[ok], t[ok], v[ok], i[ok], use[ok]
        btex[c, b] = t
        bvtx[c, b] += v
        bidx[c, b] += i
        keep[at[g[ok]]] = True
