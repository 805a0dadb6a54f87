#version 430 core
// GPU-driven grass culling (wowgrass/render/grass_gpu.py). One dispatch culls every view of the
// frame: work group (x, y) is a chunk group (the instances of one model in one 33.3-unit chunk,
// consecutive in the resident arena), z the view (its frame block read as storage, FRAME_SLOTS).
// The group's box is tested once (draw distance, frustum), then its instances 64 at a time (draw
// distance, bounding sphere against the frustum, the LOD rings' keep hash). Survivors are appended
// to the view's compacted buffer in the region of their model and LOD mesh (outer rings: the
// lighter mesh): a counter per command grows by one atomic per work group, and the command's
// instance count becomes the counter clamped to the region's capacity (atomicMax of each work
// group's end). With GpuGrass.bands the groups are culled in distance bands, nearest first, each
// dispatch after the last one's appends: the draws then meet the near grass first.
//
// The commands, counters and statistics come in two sets used in turn (CULL_SET, one program per
// set): work group 0 zeroes the other set, which the next frame's dispatch uses. So a frame needs
// no reset or finalize pass of its own: one dispatch and one barrier.
//
// GRASS_EXTRA (`view --look client`): each arena and compacted record is 32 bytes, the bundle's
// 16-byte instance and 16 bytes of the client look's (render/world/client_look.py), copied together.

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
// set 0's commands (5 uints each), set 1's, then set 0's counters (one per command), set 1's
layout(std430, binding = 3) buffer Commands { uint commands[]; };
layout(std430, binding = 4) writeonly buffer Visible { uvec4 visible[]; };
layout(std430, binding = 5) buffer Stats { uint stats[]; };           // STATS_SIZE per view, set 0 then set 1

uniform uint uGroupCount;    // group slots (free ones have count 0)
uniform uint uRowGroups;     // work groups per row of the 2D dispatch
uniform uint uCommandsPerView;
uniform uint uVisiblePerView;  // compacted instances per view
uniform uint uCommandCount;  // commands of all views in one set
uniform uint uStatsCount;    // statistics of all views in one set (uints)
uniform int uLiteRing;       // rings from this one on draw the lighter mesh
uniform bool uCollectStats;
uniform vec2 uBand;          // this dispatch takes the groups whose box is this far (XY) from the camera

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

const uint OTHER_SET = 1u - uint(CULL_SET);

void main() {
    uint lid = gl_LocalInvocationIndex;
    if (gl_WorkGroupID == uvec3(0u)) {  // the other set, for the next frame: counts, counters, statistics
        for (uint c = lid; c < uCommandCount; c += 64u) {
            commands[(OTHER_SET * uCommandCount + c) * 5u + 1u] = 0u;
            commands[(2u * 5u + OTHER_SET) * uCommandCount + c] = 0u;
        }
        for (uint k = lid; k < uStatsCount; k += 64u) stats[OTHER_SET * uStatsCount + k] = 0u;
    }
    uint g = gl_WorkGroupID.y * uRowGroups + gl_WorkGroupID.x;
    if (g >= uGroupCount) return;                     // the whole work group: no barrier reached
    Group grp = groups[g];
    uint count = grp.info.y;
    if (count == 0u) return;
    uint view = gl_WorkGroupID.z;
    vec4 grass0 = frameSlots[view * uint(FRAME_STRIDE) + 10u];  // uGrassFrame[0]: camera xy, fade start, draw distance
    vec2 camXY = grass0.xy;
    float drawDistance = grass0.w;
    vec2 gap = max(max(grp.lo.xy - camXY, camXY - grp.hi.xy), vec2(0.0));
    float gap2 = dot(gap, gap);
    if (gap2 >= drawDistance * drawDistance || gap2 < uBand.x * uBand.x || gap2 >= uBand.y * uBand.y) return;
    loadFrameSlot(view);
    vec3 pad = vec3(grp.lo.w, grp.lo.w, 0.0);
    if (boxOutside(0.5 * (grp.lo.xyz + grp.hi.xyz), 0.5 * (grp.hi.xyz - grp.lo.xyz) + pad)) return;

    Model model = models[grp.info.z];
    uint cmd0 = uint(CULL_SET) * uCommandCount + view * uCommandsPerView + grp.info.z * 2u;
    uint counter0 = (2u * 5u + uint(CULL_SET)) * uCommandCount + view * uCommandsPerView + grp.info.z * 2u;
    uint visibleBase = view * uVisiblePerView;
    uint statsBase = uint(CULL_SET) * uStatsCount + view * STATS_SIZE;
    if (lid < 4u) sRing[lid] = 0u;
    for (uint start = 0u; start < count; start += 64u) {
        uint i = start + lid;
        bool keep = false;
        uint lod = 0u;
        uvec4 q = uvec4(0u);
#if defined GRASS_EXTRA
        uvec4 e = uvec4(0u);
#endif
        int ring = 0;
        if (i < count) {
#if defined GRASS_EXTRA
            q = arena[(grp.info.x + i) * 2u];
            e = arena[(grp.info.x + i) * 2u + 1u];
#else
            q = arena[grp.info.x + i];
#endif
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
        if (lid < 2u && sCount[lid] > 0u) {
            uint base = atomicAdd(commands[counter0 + lid], sCount[lid]);
            sBase[lid] = base;
            atomicMax(commands[(cmd0 + lid) * 5u + 1u], min(base + sCount[lid], lid == 0u ? model.region.y : model.region.w));
        }
        barrier();
        uint at = sBase[lod] + slot;
        uint cap = lod == 0u ? model.region.y : model.region.w;
#if defined GRASS_EXTRA
        if (keep && at < cap) {
            uint v = visibleBase + (lod == 0u ? model.region.x : model.region.z) + at;
            visible[v * 2u] = q;
            visible[v * 2u + 1u] = e;
        }
#else
        if (keep && at < cap) visible[visibleBase + (lod == 0u ? model.region.x : model.region.z) + at] = q;
#endif
        barrier();                                    // sCount is reset by the next round
    }
    if (uCollectStats) {
        if (lid == 0u) {
            atomicAdd(stats[statsBase + 0u], count);
            atomicAdd(stats[statsBase + 1u], 1u);
        }
        if (lid < 4u && sRing[lid] > 0u) atomicAdd(stats[statsBase + 2u + lid], sRing[lid]);
    }
}
#endif
