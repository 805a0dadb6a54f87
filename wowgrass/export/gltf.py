"""glTF 2.0 binary (.glb) writing through pygltflib: meshes, PNG textures, instanced nodes.

WoW's world and model space are X north, Y west, Z up (right-handed); glTF is Y up. The same
proper rotation as the OBJ export maps one onto the other: ``(x, y, z) -> (x, z, -y)``, so glTF
+X is north, +Y up, +Z east, and a yaw about WoW's Z is the same angle about glTF's Y. Blender's
importer turns Y up back into Z up, which puts everything where WoW has it.

Instances (:meth:`GltfBuilder.instances`): a single placement is a plain node with its transform;
a group of ``EXT_MIN_INSTANCES`` or more goes out as ``EXT_mesh_gpu_instancing`` on a node that
carries the first instance's transform (the accessors hold every instance relative to it), so an
importer without the extension still shows one copy at a real placement; smaller groups, and every
group in ``nodes`` mode, are one node per instance. ``merged`` mode (grass) bakes instances into one
mesh per chunk and model (:func:`merge_instances`), which every importer loads quickly.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import numpy as np
import pygltflib as g

from wowgrass import __version__

INSTANCING_EXT = "EXT_mesh_gpu_instancing"
INSTANCING_MODES = ("ext", "nodes", "merged")
EXT_MIN_INSTANCES = 4  # below this, nodes cost less than the extension's three accessors and place right everywhere
NODES_LIMIT = 10_000  # more nodes than this and importers crawl (Blender 3.4: minutes and GBs for 160k)


def to_gltf(v: np.ndarray) -> np.ndarray:
    """(n, 3) WoW (X north, Y west, Z up) -> glTF (north, up, east), float32."""
    v = np.asarray(v, np.float64).reshape(-1, 3)
    return np.stack([v[:, 0], v[:, 2], -v[:, 1]], axis=1).astype(np.float32)


# C maps WoW vectors onto glTF ones; a WoW transform M becomes C M C^T
_C = np.array([[1, 0, 0, 0], [0, 0, 1, 0], [0, -1, 0, 0], [0, 0, 0, 1]], np.float64)


def yaw_quaternions(yaw: np.ndarray) -> np.ndarray:
    """(n, 4) xyzw rotations about glTF +Y (WoW +Z) by ``yaw`` radians."""
    h = np.asarray(yaw, np.float64) / 2.0
    q = np.zeros((len(h), 4), np.float32)
    q[:, 1], q[:, 3] = np.sin(h), np.cos(h)
    return q


def matrices_to_trs(cols16: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Column-major WoW model matrices (n, 16) -> glTF translation, xyzw rotation, scale.

    The rotation part must be a uniformly scaled rotation (MDDF placements are)."""
    m = np.asarray(cols16, np.float64).reshape(-1, 4, 4).transpose(0, 2, 1)  # row-major
    m = _C @ m @ _C.T
    t = m[:, :3, 3].astype(np.float32)
    r = m[:, :3, :3]
    s = np.cbrt(np.linalg.det(r))
    s = np.where(np.abs(s) > 1e-12, s, 1.0)
    r = r / s[:, None, None]
    return t, rotation_quaternions(r), np.repeat(s[:, None], 3, axis=1).astype(np.float32)


def rotation_quaternions(r: np.ndarray) -> np.ndarray:
    """(n, 3, 3) rotation matrices -> (n, 4) unit xyzw quaternions (Shepperd's method, vectorized)."""
    r = np.asarray(r, np.float64)
    tr = r[:, 0, 0] + r[:, 1, 1] + r[:, 2, 2]
    cand = np.stack([tr, r[:, 0, 0], r[:, 1, 1], r[:, 2, 2]], axis=1)
    pick = np.argmax(cand, axis=1)
    q = np.empty((len(r), 4))
    w = 1.0 + tr
    x = 1.0 + r[:, 0, 0] - r[:, 1, 1] - r[:, 2, 2]
    y = 1.0 - r[:, 0, 0] + r[:, 1, 1] - r[:, 2, 2]
    z = 1.0 - r[:, 0, 0] - r[:, 1, 1] + r[:, 2, 2]
    a, b, c = r[:, 2, 1] - r[:, 1, 2], r[:, 0, 2] - r[:, 2, 0], r[:, 1, 0] - r[:, 0, 1]
    d, e, f = r[:, 1, 0] + r[:, 0, 1], r[:, 0, 2] + r[:, 2, 0], r[:, 2, 1] + r[:, 1, 2]
    rows = [np.stack(v, 1) for v in ((a, b, c, w), (x, d, e, a), (d, y, f, b), (e, f, z, c))]
    for k in range(4):
        sel = pick == k
        q[sel] = rows[k][sel]
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return q.astype(np.float32)


def quat_conj(q: np.ndarray) -> np.ndarray:
    q = np.asarray(q, np.float64)
    return np.concatenate([-q[..., :3], q[..., 3:]], axis=-1)


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton products of xyzw quaternions (broadcasting)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    av, aw, bv, bw = a[..., :3], a[..., 3:], b[..., :3], b[..., 3:]
    return np.concatenate([aw * bv + bw * av + np.cross(av, bv),
                           aw * bw - np.sum(av * bv, axis=-1, keepdims=True)], axis=-1)


def quat_matrices(q: np.ndarray) -> np.ndarray:
    """(n, 4) unit xyzw quaternions -> (n, 3, 3) rotation matrices."""
    x, y, z, w = np.asarray(q, np.float64).reshape(-1, 4).T
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], 1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], 1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], 1)], 1)


def relative_to_first(t: np.ndarray, r: np.ndarray, s: np.ndarray):
    """Instance transforms relative to the first one: node(first) @ relative(k) == instance(k).

    Scales must be uniform (MDDF, MODF and grass are), so the relative transforms stay TRS."""
    t, r, s = (np.asarray(a, np.float64) for a in (t, r, s))
    inv = quat_conj(r[0])
    s0 = s[0, 0] if abs(s[0, 0]) > 1e-12 else 1.0
    d = (t - t[0]) / s0
    rel_t = d @ quat_matrices(inv[None])[0].T
    rel_r = quat_mul(inv, r)
    rel_r /= np.linalg.norm(rel_r, axis=1, keepdims=True)
    rel_t[0], rel_r[0] = 0.0, [0.0, 0.0, 0.0, 1.0]  # exactly the identity, not its rounding
    return rel_t.astype(np.float32), rel_r.astype(np.float32), (s / s0).astype(np.float32)


@dataclass
class Primitive:
    indices: np.ndarray  # (m,) triangle list
    material: int | None


@dataclass
class MeshPart:
    """CPU mesh in glTF space: vertex streams shared by its primitives."""

    name: str
    positions: np.ndarray  # (n, 3) f4, glTF space
    normals: np.ndarray | None
    uvs: np.ndarray | None
    primitives: list[Primitive] = field(default_factory=list)
    colours: np.ndarray | None = None  # (n, 4) linear RGBA 0..1 (COLOR_0), or None


def merge_instances(part: "MeshPart", t: np.ndarray, r: np.ndarray, s: np.ndarray, name: str) -> "MeshPart":
    """One mesh of ``part`` placed at every (translation, xyzw rotation, scale): its vertices
    transformed, its primitives (and materials) kept, indices offset per copy."""
    t, s = np.asarray(t, np.float64).reshape(-1, 3), np.asarray(s, np.float64).reshape(-1, 3)
    rot = quat_matrices(r)
    n, nv = len(t), len(part.positions)
    p = np.asarray(part.positions, np.float64)
    pos = np.einsum("kij,vj->kvi", rot * s[:, None, :], p) + t[:, None, :]
    nrm = None
    if part.normals is not None:  # inverse transpose of R S is R S^-1
        nrm = np.einsum("kij,vj->kvi", rot / s[:, None, :], np.asarray(part.normals, np.float64)).reshape(-1, 3)
        nrm /= np.maximum(np.linalg.norm(nrm, axis=1, keepdims=True), 1e-12)
        nrm = nrm.astype(np.float32)
    uvs = None if part.uvs is None else np.tile(np.asarray(part.uvs, np.float32), (n, 1))
    col = None if part.colours is None else np.tile(np.asarray(part.colours, np.float32), (n, 1))
    base = (np.arange(n, dtype=np.int64) * nv)[:, None]
    prims = [Primitive((np.asarray(pr.indices, np.int64)[None, :] + base).reshape(-1).astype(np.uint32), pr.material)
             for pr in part.primitives]
    return MeshPart(name, pos.reshape(-1, 3).astype(np.float32), nrm, uvs, prims, col)


class GltfBuilder:
    """Accumulates a glTF document and its one binary buffer; :meth:`glb` returns the file."""

    def __init__(self):
        self.doc = g.GLTF2(asset=g.Asset(generator=f"wowgrass {__version__}", version="2.0"),
                           scenes=[g.Scene(nodes=[])], scene=0)
        self.blob = bytearray()
        self._materials: dict = {}
        self._sampler: dict = {}

    # --- buffer --------------------------------------------------------------------------------

    def _view(self, data: bytes, target=None) -> int:
        self.blob += b"\0" * (-len(self.blob) % 4)
        self.doc.bufferViews.append(g.BufferView(buffer=0, byteOffset=len(self.blob), byteLength=len(data),
                                                 target=target))
        self.blob += data
        return len(self.doc.bufferViews) - 1

    def accessor(self, arr: np.ndarray, *, target=None, bounds: bool = False) -> int:
        arr = np.ascontiguousarray(arr)
        comp = {np.dtype("<f4"): g.FLOAT, np.dtype("<u4"): g.UNSIGNED_INT,
                np.dtype("<u2"): g.UNSIGNED_SHORT}[arr.dtype.newbyteorder("<")]
        kind = g.SCALAR if arr.ndim == 1 else {2: g.VEC2, 3: g.VEC3, 4: g.VEC4}[arr.shape[1]]
        acc = g.Accessor(bufferView=self._view(arr.tobytes(), target), componentType=comp,
                         count=int(arr.shape[0]), type=kind)
        if bounds and len(arr):
            flat = arr.reshape(len(arr), -1)
            acc.min = [float(v) for v in flat.min(axis=0)]
            acc.max = [float(v) for v in flat.max(axis=0)]
            if comp != g.FLOAT:
                acc.min, acc.max = [int(v) for v in acc.min], [int(v) for v in acc.max]
        self.doc.accessors.append(acc)
        return len(self.doc.accessors) - 1

    # --- textures and materials ----------------------------------------------------------------

    def texture(self, rgba: np.ndarray, name: str, *, clamp: bool = False) -> int:
        from PIL import Image

        arr = np.ascontiguousarray(rgba, np.uint8)
        mode = "RGBA" if arr.shape[2] == 4 else "RGB"
        if mode == "RGBA" and (arr[..., 3] == 255).all():
            arr, mode = np.ascontiguousarray(arr[..., :3]), "RGB"
        buf = io.BytesIO()
        Image.fromarray(arr, mode).save(buf, "PNG")
        self.doc.images.append(g.Image(bufferView=self._view(buf.getvalue()), mimeType="image/png", name=name))
        wrap = g.CLAMP_TO_EDGE if clamp else g.REPEAT
        if wrap not in self._sampler:
            self.doc.samplers.append(g.Sampler(magFilter=g.LINEAR, minFilter=g.LINEAR_MIPMAP_LINEAR,
                                               wrapS=wrap, wrapT=wrap))
            self._sampler[wrap] = len(self.doc.samplers) - 1
        self.doc.textures.append(g.Texture(source=len(self.doc.images) - 1, sampler=self._sampler[wrap],
                                           name=name))
        return len(self.doc.textures) - 1

    def material(self, name: str, texture: int | None, *, alpha: str = g.OPAQUE, double_sided: bool = False,
                 colour=(1.0, 1.0, 1.0, 1.0)) -> int:
        key = (texture, alpha, double_sided, tuple(colour)) if texture is not None else (name, alpha, double_sided)
        if key in self._materials:
            return self._materials[key]
        pbr = g.PbrMetallicRoughness(baseColorFactor=list(colour), metallicFactor=0.0, roughnessFactor=1.0,
                                     baseColorTexture=g.TextureInfo(index=texture) if texture is not None else None)
        mat = g.Material(name=name, pbrMetallicRoughness=pbr, alphaMode=alpha, doubleSided=double_sided,
                         alphaCutoff=0.5 if alpha == g.MASK else None)
        self.doc.materials.append(mat)
        self._materials[key] = len(self.doc.materials) - 1
        return self._materials[key]

    # --- meshes and nodes ----------------------------------------------------------------------

    def mesh(self, part: MeshPart) -> int:
        pos = np.ascontiguousarray(part.positions, np.float32)
        attrs = g.Attributes(POSITION=self.accessor(pos, target=g.ARRAY_BUFFER, bounds=True))
        if part.normals is not None:
            n = np.asarray(part.normals, np.float64)
            length = np.linalg.norm(n, axis=1, keepdims=True)
            n = np.where(length > 1e-6, n / np.maximum(length, 1e-12), [0.0, 1.0, 0.0])
            attrs.NORMAL = self.accessor(n.astype(np.float32), target=g.ARRAY_BUFFER)
        if part.uvs is not None:
            attrs.TEXCOORD_0 = self.accessor(np.asarray(part.uvs, np.float32), target=g.ARRAY_BUFFER)
        if part.colours is not None:
            attrs.COLOR_0 = self.accessor(np.clip(np.asarray(part.colours, np.float32), 0, 1),
                                          target=g.ARRAY_BUFFER)
        prims = []
        for p in part.primitives:
            if len(p.indices) == 0:
                continue
            dtype = "<u2" if len(pos) <= 65535 else "<u4"
            idx = self.accessor(np.asarray(p.indices).astype(dtype), target=g.ELEMENT_ARRAY_BUFFER, bounds=True)
            prims.append(g.Primitive(attributes=attrs, indices=idx, material=p.material))
        self.doc.meshes.append(g.Mesh(name=part.name, primitives=prims))
        return len(self.doc.meshes) - 1

    def node(self, name: str, *, mesh=None, parent: int | None = None, translation=None, rotation=None,
             scale=None, extras=None) -> int:
        nd = g.Node(name=name, mesh=mesh, extras=extras or {})
        if translation is not None:
            nd.translation = [float(v) for v in translation]
        if rotation is not None:
            nd.rotation = [float(v) for v in rotation]
        if scale is not None:
            nd.scale = [float(v) for v in scale]
        self.doc.nodes.append(nd)
        i = len(self.doc.nodes) - 1
        if parent is None:
            self.doc.scenes[0].nodes.append(i)
        else:
            self.doc.nodes[parent].children.append(i)
        return i

    def instances(self, name: str, mesh: int, parent: int, t: np.ndarray, r: np.ndarray, s: np.ndarray,
                  mode: str = "ext", extras=None) -> int:
        """Place ``mesh`` at every (translation, xyzw rotation, scale); returns the group's node.

        One placement: a plain node with its transform. ``ext`` with ``EXT_MIN_INSTANCES`` or more:
        the extension on a node carrying the first instance's transform (the fallback an importer
        without it shows: one copy at a real placement). Otherwise a group node, one child each."""
        n = len(t)
        if n == 1:
            return self.node(name, mesh=mesh, parent=parent, translation=t[0], rotation=r[0], scale=s[0],
                             extras=extras)
        if mode == "ext" and n >= EXT_MIN_INSTANCES:
            if INSTANCING_EXT not in self.doc.extensionsUsed:
                self.doc.extensionsUsed.append(INSTANCING_EXT)
            i = self.node(name, mesh=mesh, parent=parent, translation=t[0], rotation=r[0], scale=s[0],
                          extras=extras)
            rt, rr, rs = relative_to_first(t, r, s)
            self.doc.nodes[i].extensions = {INSTANCING_EXT: {"attributes": {
                "TRANSLATION": self.accessor(rt, bounds=True),
                "ROTATION": self.accessor(rr),
                "SCALE": self.accessor(rs),
            }}}
            return i
        group = self.node(name, parent=parent, extras=extras)
        for k in range(n):  # one node per instance is the point of this mode
            self.node(f"{name}.{k}", mesh=mesh, parent=group, translation=t[k], rotation=r[k], scale=s[k])
        return group

    def glb(self) -> bytes:
        self.blob += b"\0" * (-len(self.blob) % 4)
        if not self.blob:   # nodes only: no buffer (one of 0 bytes, pygltflib's, is invalid glTF)
            import struct

            self.doc.buffers = []
            text = self.doc.to_json().encode("utf-8")
            text += b" " * (-len(text) % 4)
            return struct.pack("<4sII", b"glTF", 2, 20 + len(text)) + struct.pack("<I4s", len(text), b"JSON") + text
        self.doc.buffers = [g.Buffer(byteLength=len(self.blob))]
        self.doc.set_binary_blob(bytes(self.blob))
        return b"".join(self.doc.save_to_bytes())
