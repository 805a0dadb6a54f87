#version 430 core
// Terrain LOD and culling on the GPU (wowgrass/render/terrain.py's TerrainSet.prepare): one
// dispatch for every view of the frame (z: the view, its frame block read as storage, FRAME_SLOTS);
// one invocation per resident chunk and view writes that chunk's DrawElementsIndirectCommand in the view's section:
// the index range of the level its box's distance picks, count 0 when it is outside the frustum,
// beyond the view distance, or a free slot. baseInstance carries the level (debug colouring).
// In a lines view (its bit in uLineViews) the command draws the same triangles' edges from the arena's edge
// list, where triangle index k's edges start at line index 2k: count and first index doubled.
// Mirrors terrain.select_lod (the CPU reference in the tests).

#include "frame.glsl"

#if defined COMPUTE_SHADER
layout(local_size_x = 64) in;

struct ChunkBox { vec4 lo; vec4 hi; };
layout(std430, binding = 0) readonly buffer Chunks { ChunkBox boxes[]; };
layout(std430, binding = 1) readonly buffer Ranges { uint ranges[]; };  // per chunk: first[5], count[5]
layout(std430, binding = 2) writeonly buffer Commands { uint commands[]; };  // 5 uints per chunk, a section per view

uniform uint uChunks;
uniform uint uViewChunks;  // commands per view section
uniform vec3 uLodEye;     // the main camera: levels are the same in every view
uniform vec4 uLodBands;   // ends of the bands of levels 0..3
uniform float uLodZScale;
uniform uint uLineViews;  // bit v: view v draws the edge list
uniform uint uMinLevel;   // the finest level the arena's tiles keep (far tiles: coarse levels only)

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= uChunks) return;
    uint view = gl_WorkGroupID.z;
    loadFrameSlot(view);  // this view's camera (distance culling: uCameraPos, uNearFar.y) and frustum
    vec3 c = (boxes[i].lo.xyz + boxes[i].hi.xyz) * 0.5;
    vec3 e = (boxes[i].hi.xyz - boxes[i].lo.xyz) * 0.5;
    vec3 q = max(abs(c - uCameraPos) - e, 0.0);
    bool visible = dot(q, q) < uNearFar.y * uNearFar.y;
    for (int p = 0; p < 6; ++p)
        visible = visible && dot(uFrustum[p].xyz, c) + dot(abs(uFrustum[p].xyz), e) >= -uFrustum[p].w;
    vec3 ql = max(abs(c - uLodEye) - e, 0.0);
    ql.z *= uLodZScale;
    float d = length(ql);
    uint level = 0u;
    for (int l = 0; l < 4; ++l)
        if (d >= uLodBands[l]) level = uint(l + 1);
    level = max(level, uMinLevel);
    uint base = i * 10u, k = (uLineViews >> view & 1u) != 0u ? 2u : 1u;
    uint at = (view * uViewChunks + i) * 5u;
    commands[at + 0u] = visible ? k * ranges[base + 5u + level] : 0u;
    commands[at + 1u] = 1u;
    commands[at + 2u] = k * ranges[base + level];
    commands[at + 3u] = 0u;
    commands[at + 4u] = level;
}
#endif
