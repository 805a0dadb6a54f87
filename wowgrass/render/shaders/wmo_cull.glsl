#version 430 core
// WMO placements culled on the GPU (render/sources/wmo.py). One dispatch for every view of the
// frame (z: the view, its frame block read as storage): one invocation per (placement, group)
// record tests the group's world box against the view's frustum and appends the placement's
// matrix to the view's region of that group, counting it in the group's draw commands (a solid
// and a blended one). Commands come in two sets used in turn: work group 0 zeroes the other set's
// counts for the next frame, so a frame needs this one dispatch and a barrier.

#include "frame.glsl"

#if defined COMPUTE_SHADER
layout(local_size_x = 64) in;

struct Record {
    mat4 model;
    vec4 lo;       // world box of the group under the placement
    vec4 hi;
    uvec4 info;    // group slot, unused x3
};

// binding points: WMO_RECORDS .. WMO_RECORDS + 3 (defines from render/sources/wmo.py)
layout(std430, binding = WMO_RECORDS) readonly buffer Records { Record records[]; };
layout(std430, binding = WMO_SLOTS) readonly buffer Slots { uvec4 slots[]; };   // first command (in a view), region base, capacity, unused
layout(std430, binding = WMO_COMMANDS) buffer Commands { uint commands[]; };      // 5 uints each; set 0 then set 1
layout(std430, binding = WMO_VISIBLE) writeonly buffer Visible { mat4 visible[]; };

uniform uint uRecordCount;
uniform uint uCommandsPerView;
uniform uint uCommandCount;      // all views' commands in one set
uniform uint uVisiblePerView;

const uint OTHER_SET = 1u - uint(CULL_SET);

bool boxOutside(vec3 c, vec3 e) {
    for (int i = 0; i < 6; ++i) {
        vec4 p = uFrustum[i];
        if (dot(p.xyz, c) + dot(abs(p.xyz), e) + p.w < 0.0) return true;
    }
    return false;
}

void main() {
    if (gl_WorkGroupID.x == 0u && gl_WorkGroupID.z == 0u) {
        for (uint c = gl_LocalInvocationIndex; c < uCommandCount; c += 64u)
            commands[(OTHER_SET * uCommandCount + c) * 5u + 1u] = 0u;
    }
    uint i = gl_GlobalInvocationID.x;
    if (i >= uRecordCount) return;
    uint view = gl_WorkGroupID.z;
    loadFrameSlot(view);
    Record r = records[i];
    vec3 c = 0.5 * (r.lo.xyz + r.hi.xyz);
    vec3 e = 0.5 * (r.hi.xyz - r.lo.xyz);
    if (boxOutside(c, e)) return;
    uvec4 s = slots[r.info.x];
    uint cmd = uint(CULL_SET) * uCommandCount + view * uCommandsPerView + s.x;
    uint k = atomicAdd(commands[cmd * 5u + 1u], 1u);
    atomicMax(commands[(cmd + 1u) * 5u + 1u], k + 1u);   // the blended batches: the same instances
    visible[view * uVisiblePerView + s.y + k] = r.model;
}
#endif
