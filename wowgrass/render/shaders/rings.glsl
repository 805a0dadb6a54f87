// LOD density rings (needs frame.glsl): ring 0 keeps every instance, ring k (from uRings[k-1] out)
// keeps the instances whose hash is below uRingKeep[k-1]. Nested by construction: the keep
// fractions do not grow outwards, so an instance an outer ring keeps every inner ring keeps too.
// The same functions run in the culling compute shader and in the grass vertex stage; the numpy
// reference is wowgrass/render/rings.py.

// A stable hash of an instance in [0, 1), from its position bits (no extra per-instance data).
float grassInstanceHash(uvec3 p) {
    uint h = (p.x * 0x8da6b343u) ^ (p.y * 0xd8163841u) ^ (p.z * 0xcb1ab31fu);
    h ^= h >> 16; h *= 0x7feb352du;
    h ^= h >> 15; h *= 0x846ca68bu;
    h ^= h >> 16;
    return float(h >> 8) * (1.0 / 16777216.0);
}

// ring of XY distance d: 0 (inner, everything kept) .. 3
int grassRing(float d) {
    return int(d >= uRings.x) + int(d >= uRings.y) + int(d >= uRings.z);
}

// whether the rings keep an instance with hash h at distance d
bool grassRingKeeps(float d, float h) {
    return (h < uRingKeep.x || d < uRings.x) && (h < uRingKeep.y || d < uRings.y) && (h < uRingKeep.z || d < uRings.z);
}

// 1 for a kept instance, falling to 0 over the band before the edge of the ring that drops it
float grassRingFade(float d, float h) {
    float band = max(uRings.w, 1e-3);
    float f = 1.0;
    if (h >= uRingKeep.x) f = min(f, clamp((uRings.x - d) / band, 0.0, 1.0));
    if (h >= uRingKeep.y) f = min(f, clamp((uRings.y - d) / band, 0.0, 1.0));
    if (h >= uRingKeep.z) f = min(f, clamp((uRings.z - d) / band, 0.0, 1.0));
    return f;
}
