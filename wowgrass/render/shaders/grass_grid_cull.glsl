#version 430 core
// The camera-grid path's compaction pass (wowgrass/render/grid.py, docs/grid.md): one invocation
// per grid slot and blade of the slot (x: slot, y: blade index g), z the view (its frame block
// read as storage, FRAME_SLOTS: one dispatch serves every view). It makes the slot
// decisions the reference's vertex stage makes (grid_slot.glsl: tile resident, the control texel
// has a blade g, which model and layer it is, draw distance, LOD rings), adds a frustum test of the
// model's bounding sphere at the blade's root, and appends the surviving (slot, blade, model) to
// the model's region of the view's compacted buffer; the instance count of the model's
// DrawElementsIndirect command grows by one atomic per work group and model. The vertex stage
// then runs only for blades that are drawn. With uCollectStats it counts the blades in reach and
// those kept per LOD ring for --stats. Commands and statistics come in two sets used in turn
// (CULL_SET, one program per set): work group 0 zeroes the other set for the next frame, so no
// reset pass is needed (as grass_cull.glsl does).

#include "frame.glsl"
#include "rings.glsl"

#if defined COMPUTE_SHADER
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer Regions { uvec4 regions[]; };  // per model: base, capacity, command (~0u: not drawn), 0
layout(std430, binding = 1) buffer Commands { uint commands[]; };          // 5 uints per command, set 0 then set 1
layout(std430, binding = 2) writeonly buffer Visible { uvec2 visible[]; }; // slot | blade << 16, model
layout(std430, binding = 3) buffer Stats { uint stats[]; };                // per view: blades in reach, kept per ring (4); per set

uniform uint uCommandsPerView;
uniform uint uVisiblePerView;  // compacted entries per view
uniform uint uCommandCount;  // commands of all views in one set
uniform uint uStatsCount;    // statistics of all views in one set (uints)
uniform bool uCollectStats;  // count for --stats (atomics otherwise skipped)

#include "grid_slot.glsl"

#ifndef CULL_SET
#define CULL_SET 0
#endif
const uint OTHER_SET = 1u - uint(CULL_SET);
uint statsBase;  // this invocation's view's statistics in this set

// Whether invocation (slot, g) is a blade this view draws; its model and that model's region.
bool gridKept(int slot, uint g, out uint model, out uvec4 region) {
    region = uvec4(0u);
    model = 0u;
    if (slot >= GRID_SIDE * GRID_SIDE) return false;
    vec2 camXY = uGrassFrame[0].xy;
    float drawDistance = uGrassFrame[0].w;
    vec2 cell = gridSlotCell(slot, camXY);
    ivec2 ownerRC;
    uvec4 ctl;
    uint layer;
    if (!gridSlotControl(cell, camXY, drawDistance, ownerRC, ctl) || !gridBladeChannel(ctl, g, model, layer)) return false;
    region = regions[model];
    if (region.z == 0xFFFFFFFFu) return false;   // a model without a mesh
    vec2 worldXY = gridBladeXY(cell, gridBladeHashPoint(cell, float(g)));
    float d = distance(worldXY, camXY);
    if (uCollectStats) atomicAdd(stats[statsBase], 1u);
    if (d >= drawDistance || gridRingFade(cell, float(g), d) <= 0.0) return false;
    // the model's bounding sphere at the root, widened by the furthest the wind moves a tip
    vec4 bound = gridModelInfo(model);
    vec3 c = vec3(worldXY, gridTerrainHeight(worldXY, ownerRC) + bound.z);
    float r = bound.w + GRID_WIND_REACH;
    for (int k = 0; k < 6; ++k) if (dot(uFrustum[k].xyz, c) + uFrustum[k].w < -r) return false;
    if (uCollectStats) atomicAdd(stats[statsBase + 1u + uint(grassRing(d))], 1u);
    return true;
}

// The work group's survivors are counted per model in shared memory (a 64-entry table, one
// entry per model present: neighbouring slots mostly grow the same models) and each model's
// count goes to its command in one global atomic, as grass_cull.glsl does per chunk group.
shared uint sModel[64];
shared uint sCount[64];
shared uint sBase[64];

void main() {
    uint lid = gl_LocalInvocationIndex;
    if (gl_WorkGroupID == uvec3(0u)) {  // the other set, for the next frame: counts and statistics
        for (uint c = lid; c < uCommandCount; c += 64u) commands[(OTHER_SET * uCommandCount + c) * 5u + 1u] = 0u;
        for (uint k = lid; k < uStatsCount; k += 64u) stats[OTHER_SET * uStatsCount + k] = 0u;
    }
    uint view = gl_WorkGroupID.z;
    loadFrameSlot(view);
    statsBase = uint(CULL_SET) * uStatsCount + view * uint(STATS_SIZE);
    sModel[lid] = 0xFFFFFFFFu;
    sCount[lid] = 0u;
    barrier();
    int slot = int(gl_GlobalInvocationID.x);
    uint g = gl_GlobalInvocationID.y;
    uint model;
    uvec4 region;
    bool keep = gridKept(slot, g, model, region);
    uint h = model & 63u, local = 0u;
    if (keep) {
        for (;;) {   // at most 64 models in 64 invocations: an entry is always found
            uint was = atomicCompSwap(sModel[h], 0xFFFFFFFFu, model);
            if (was == 0xFFFFFFFFu || was == model) break;
            h = (h + 1u) & 63u;
        }
        local = atomicAdd(sCount[h], 1u);
    }
    barrier();
    if (sCount[lid] > 0u)
        sBase[lid] = atomicAdd(commands[(uint(CULL_SET) * uCommandCount + view * uCommandsPerView
                                         + regions[sModel[lid]].z) * 5u + 1u], sCount[lid]);
    barrier();
    uint at = sBase[h] + local;
    if (keep && at < region.y) visible[view * uVisiblePerView + region.x + at] = uvec2(uint(slot) | (g << 16), model);
}
#endif
