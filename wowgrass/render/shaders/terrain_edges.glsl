#version 430 core
// A slot's triangle list as its edge list (render/sources/terrain_arenas.py, what a lines view
// draws): triangle k's (a, b, c) -> (a b, b c, c a) at line index 6k.

#if defined COMPUTE_SHADER
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Tris { uint tris[]; };
layout(std430, binding = 1) writeonly buffer Lines { uint lines[]; };
uniform uint uFirst;
uniform uint uCount;
void main() {
    uint t = gl_GlobalInvocationID.x;
    if (t >= uCount) return;
    uint k = uFirst + t;
    uint a = tris[3u * k], b = tris[3u * k + 1u], c = tris[3u * k + 2u];
    lines[6u * k] = a; lines[6u * k + 1u] = b;
    lines[6u * k + 2u] = b; lines[6u * k + 3u] = c;
    lines[6u * k + 4u] = c; lines[6u * k + 5u] = a;
}
#endif
