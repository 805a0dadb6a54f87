#version 430
// Turns the per-list counters of the generation passes into indirect draw commands
// (DrawElementsIndirectCommand: count, instances, first index, base vertex, base instance), one
// for the triangle index buffer and one for the line index buffer of each list, and zeroes the
// counters for the next frame: no CPU readback, no per-frame upload.

#if defined COMPUTE_SHADER
layout(local_size_x = 32) in;
uniform int uSlots;
layout(std430, binding = 1) buffer Counters { uint counter[]; };
layout(std430, binding = 2) writeonly buffer Commands { uint cmd[]; };   // triangle commands, then line commands
layout(std430, binding = 3) readonly buffer Slots { uvec4 slot[]; };     // triangle / line index count, first instance, capacity

void main() {
    int k = int(gl_GlobalInvocationID.x);
    if (k >= uSlots) return;
    uvec4 s = slot[k];
    uint n = min(counter[k], s.w);
    counter[k] = 0u;
    int a = 5 * k, b = 5 * (uSlots + k);
    cmd[a] = s.x; cmd[a + 1] = n; cmd[a + 2] = 0u; cmd[a + 3] = 0u; cmd[a + 4] = s.z;
    cmd[b] = s.y; cmd[b + 1] = n; cmd[b + 2] = 0u; cmd[b + 3] = 0u; cmd[b + 4] = s.z;
}
#endif
