#version 430 core
// GPU-driven grass culling (wowgrass/render/grass_gpu.py). One work group per chunk group (the
// instances of one model in one 33.3-unit chunk, consecutive in the resident arena): the group's
// box is tested once (draw distance, frustum), then its instances 64 at a time (draw distance,
// bounding sphere against the frustum, the LOD rings' keep hash). Survivors are appended to the
// view's compacted buffer in the region of their model and LOD mesh (outer rings: the lighter
// mesh), and the instance counts of that view's DrawElementsIndirect commands grow by atomics,
// one per work group and command. With GpuGrass.bands a view is culled in distance bands, nearest
// first, each dispatch after the last one's appends: the draws then meet the near grass first. With RESET defined, the program zeroes the instance counts
// (and the statistics) before; with FINALIZE, it clamps the counts to the regions' capacities and
// totals the statistics after. All three are shader passes ordered by memory barriers: a buffer
// copy for the reset would not be ordered against the atomics around it.

#include "frame.glsl"
#include "rings.glsl"

#if defined COMPUTE_SHADER
layout(local_size_x = 64) in;

struct Group {
    vec4 lo;      // xyz: min of the instance positions (z: of the bounding spheres); w: xy pad of the frustum box
    vec4 hi;      // xyz: max of the same
    uvec4 info;   // first instance in the arena, instance count (0: a free slot), model, unused
};
struct Model {
    vec4 bound;   // bounding sphere centre z and radius in model units; unused; unused
    uvec4 region; // lod 0 base and capacity, lod 1 base and capacity (instances, in a view's region)
};

layout(std430, binding = 0) readonly buffer Arena { uvec4 arena[]; };
layout(std430, binding = 1) readonly buffer Groups { Group groups[]; };
layout(std430, binding = 2) readonly buffer Models { Model models[]; };
layout(std430, binding = 3) buffer Commands { uint commands[]; };   // 5 uints per command
layout(std430, binding = 4) writeonly buffer Visible { uvec4 visible[]; };
layout(std430, binding = 5) buffer Stats { uint stats[]; };           // STATS_SIZE per view

uniform uint uGroupCount;    // group slots (free ones have count 0)
uniform uint uRowGroups;     // work groups per row of the 2D dispatch
uniform uint uCommandBase;   // this view's first command
uniform uint uVisibleBase;   // this view's first compacted instance
uniform uint uStatsBase;     // this view's statistics
uniform uint uCommandCount;  // RESET, FINALIZE: commands of all views
uniform uint uStatsCount;    // RESET: statistics of all views (uints)
uniform int uLiteRing;       // rings from this one on draw the lighter mesh
uniform bool uCollectStats;
uniform vec2 uBand;          // this dispatch takes the groups whose box is this far (XY) from the camera

#if defined RESET
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < uCommandCount) commands[i * 5u + 1u] = 0u;
    if (uCollectStats && i < uStatsCount) stats[i] = 0u;
}
#elif defined FINALIZE
void main() {
    for (uint c = gl_LocalInvocationIndex; c < uCommandCount; c += 64u) {
        uint m = (c % (2u * uint(models.length()))) / 2u, lod = c & 1u;
        uint cap = lod == 0u ? models[m].region.y : models[m].region.w;
        uint n = commands[c * 5u + 1u];
        if (n > cap) {
            commands[c * 5u + 1u] = cap;
            atomicAdd(stats[(c / (2u * uint(models.length()))) * STATS_SIZE + 8u], n - cap);
            n = cap;
        }
        if (uCollectStats && n > 0u) {
            uint v = c / (2u * uint(models.length()));
            atomicAdd(stats[v * STATS_SIZE + 6u], n);
            atomicAdd(stats[v * STATS_SIZE + 7u], n * (commands[c * 5u] / 3u));
        }
    }
}
#else
shared uint sCount[2];
shared uint sBase[2];
shared uint sRing[4];

bool boxOutside(vec3 c, vec3 e) {
    for (int i = 0; i < 6; ++i) {
        vec4 p = uFrustum[i];
        if (dot(p.xyz, c) + dot(abs(p.xyz), e) + p.w < 0.0) return true;
    }
    return false;
}

void main() {
    uint g = gl_WorkGroupID.y * uRowGroups + gl_WorkGroupID.x;
    if (g >= uGroupCount) return;                     // the whole work group: no barrier reached
    Group grp = groups[g];
    uint count = grp.info.y;
    if (count == 0u) return;
    vec2 camXY = uGrassFrame[0].xy;
    float drawDistance = uGrassFrame[0].w;
    vec2 gap = max(max(grp.lo.xy - camXY, camXY - grp.hi.xy), vec2(0.0));
    float gap2 = dot(gap, gap);
    if (gap2 >= drawDistance * drawDistance || gap2 < uBand.x * uBand.x || gap2 >= uBand.y * uBand.y) return;
    vec3 pad = vec3(grp.lo.w, grp.lo.w, 0.0);
    if (boxOutside(0.5 * (grp.lo.xyz + grp.hi.xyz), 0.5 * (grp.hi.xyz - grp.lo.xyz) + pad)) return;

    uint lid = gl_LocalInvocationIndex;
    Model model = models[grp.info.z];
    uint cmd0 = uCommandBase + grp.info.z * 2u;
    if (lid < 4u) sRing[lid] = 0u;
    for (uint start = 0u; start < count; start += 64u) {
        uint i = start + lid;
        bool keep = false;
        uint lod = 0u;
        uvec4 q = uvec4(0u);
        int ring = 0;
        if (i < count) {
            q = arena[grp.info.x + i];
            vec3 p = uintBitsToFloat(q.xyz);
            float s = float(q.w >> 16) * (1.0 / 4096.0);
            float d = distance(p.xy, camXY);
            keep = d < drawDistance;
            vec3 c = p + vec3(0.0, 0.0, model.bound.x * s);
            float r = model.bound.y * s;
            for (int k = 0; k < 6 && keep; ++k) keep = dot(uFrustum[k].xyz, c) + uFrustum[k].w >= -r;
            keep = keep && grassRingKeeps(d, grassInstanceHash(q.xyz));
            ring = grassRing(d);
            lod = ring >= uLiteRing ? 1u : 0u;
        }
        if (lid < 2u) sCount[lid] = 0u;
        barrier();
        uint slot = 0u;
        if (keep) {
            slot = atomicAdd(sCount[lod], 1u);
            if (uCollectStats) atomicAdd(sRing[ring], 1u);
        }
        barrier();
        if (lid < 2u) sBase[lid] = sCount[lid] > 0u ? atomicAdd(commands[(cmd0 + lid) * 5u + 1u], sCount[lid]) : 0u;
        barrier();
        uint at = sBase[lod] + slot;
        uint cap = lod == 0u ? model.region.y : model.region.w;
        if (keep && at < cap) visible[uVisibleBase + (lod == 0u ? model.region.x : model.region.z) + at] = q;
        barrier();                                    // sCount is reset by the next round
    }
    if (uCollectStats) {
        if (lid == 0u) {
            atomicAdd(stats[uStatsBase + 0u], count);
            atomicAdd(stats[uStatsBase + 1u], 1u);
        }
        if (lid < 4u && sRing[lid] > 0u) atomicAdd(stats[uStatsBase + 2u + lid], sRing[lid]);
    }
}
#endif
#endif
