#version 430
// The meadow's terrain tile selection on the GPU: one invocation per tile tests its box against
// the (widened) view frustum, picks the LOD mesh by the tile's nearest distance to the camera and
// appends the tile's corner to that LOD's instance list (counted in Counters; the command pass
// turns the counts into indirect draws). Nothing is read back or uploaded per frame.

#if defined COMPUTE_SHADER
layout(local_size_x = 64) in;

uniform int uTiles;           // tiles per side
uniform float uTileSize;
uniform vec3 uCameraPos;
uniform vec4 uPlanes[6];      // inside where dot(xyz, p) + w >= 0
uniform float uCullMargin;    // planes widened by this (shadow casters just outside the view)
uniform vec4 uBandEnds;       // far end of LOD 0, 1, 2 (LOD 3 beyond)
uniform int uLodCount;

layout(std430, binding = 0) writeonly buffer TileLists { vec2 tile_corner[]; };   // LOD l at l * tiles^2
layout(std430, binding = 1) buffer Counters { uint counter[]; };
layout(std430, binding = 4) readonly buffer TileZ { vec2 tile_z[]; };             // min, max height

void main() {
    int t = int(gl_GlobalInvocationID.x);
    int n = uTiles * uTiles;
    if (t >= n) return;
    vec2 lo = vec2(t % uTiles, t / uTiles) * uTileSize;
    vec2 hi = lo + uTileSize;
    vec2 z = tile_z[t];
    vec3 c = vec3((lo + hi) * 0.5, (z.x + z.y) * 0.5);
    vec3 e = vec3(uTileSize * 0.5, uTileSize * 0.5, (z.y - z.x) * 0.5 + 0.5);
    for (int i = 0; i < 6; ++i) {
        vec4 p = uPlanes[i];
        if (dot(p.xyz, c) + dot(abs(p.xyz), e) + p.w < -uCullMargin) return;
    }
    vec2 nearest = clamp(uCameraPos.xy, lo, hi);
    float d = distance(nearest, uCameraPos.xy);
    int lod = 0;
    while (lod < uLodCount - 1 && d >= uBandEnds[lod]) ++lod;
    uint k = atomicAdd(counter[lod], 1u);
    tile_corner[lod * n + int(k)] = lo;
}
#endif
