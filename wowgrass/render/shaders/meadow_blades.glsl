#version 430
// The meadow's grass blades generated on the GPU every frame: one invocation per grid cell of
// the square around the camera. The cell's Wang hash gives a jittered position, rotation, size,
// tint and a keep value; the blade is dropped beyond the draw distance, where the LOD ring's
// density keeps fewer blades (keep >= the ring's fraction), on steep slopes and outside the
// view frustum; survivors are appended to their ring's instance list (the lesson's 40-byte
// record) and counted. heightfield.py places the same blades on the CPU (--cpu-instances).

#if defined COMPUTE_SHADER
layout(local_size_x = 16, local_size_y = 16) in;
#include "heightfield.glsl"

#define MAX_RINGS 8
uniform ivec2 uCellOrigin;    // first cell (ix, iy) of this dispatch
uniform ivec2 uCellCount;
uniform float uSpacing;       // cell size, world units
uniform uint uSeed;
uniform vec3 uCameraPos;
uniform vec4 uPlanes[6];
uniform float uCullMargin;
uniform float uMinNormalZ;    // slope limit: steeper ground grows no grass
uniform vec4 uBladeShape;     // height min, height range, width min, width range
uniform int uRingCount;
uniform vec4 uRings[MAX_RINGS];      // (outer radius, keep fraction, fade width, next ring's keep fraction)
uniform uvec2 uRingSlots[MAX_RINGS]; // (first instance, capacity)

layout(std430, binding = 0) writeonly buffer Instances { float inst[]; };   // 10 floats a blade
layout(std430, binding = 1) buffer Counters { uint counter[]; };

uint wang(uint s) {
    s = (s ^ 61u) ^ (s >> 16);
    s *= 9u;
    s = s ^ (s >> 4);
    s *= 0x27d4eb2du;
    s = s ^ (s >> 15);
    return s;
}
float unit(uint h) { return float(h >> 8) * (1.0 / 16777216.0); }

void main() {
    ivec2 id = ivec2(gl_GlobalInvocationID.xy);
    if (any(greaterThanEqual(id, uCellCount))) return;
    ivec2 cell = uCellOrigin + id;
    uint h0 = wang((uint(cell.x) * 73856093u) ^ (uint(cell.y) * 19349663u) ^ uSeed);
    uint h1 = wang(h0), h2 = wang(h1), h3 = wang(h2), h4 = wang(h3), h5 = wang(h4), h6 = wang(h5);
    vec2 xy = (vec2(cell) + vec2(unit(h0), unit(h1))) * uSpacing;
    float d = distance(xy, uCameraPos.xy);
    int ring = 0;
    while (ring < uRingCount && d >= uRings[ring].x) ++ring;
    if (ring == uRingCount) return;                        // beyond the draw distance
    float keep = unit(h6);
    vec4 r = uRings[ring];
    if (keep >= r.y) return;                               // the ring's density
    if (normalAt(xy).z < uMinNormalZ) return;              // too steep
    float z = heightAt(xy);
    float height = uBladeShape.x + unit(h3) * uBladeShape.y;
    vec3 mid = vec3(xy, z + 0.5 * height);
    for (int i = 0; i < 6; ++i)
        if (dot(uPlanes[i].xyz, mid) + uPlanes[i].w < -(uCullMargin + height)) return;
    // blades the next ring drops shrink away over the ring's last stretch instead of popping
    if (keep >= r.w) height *= 1.0 - smoothstep(r.x - r.z, r.x, d);
    uint k = atomicAdd(counter[ring], 1u);
    if (k >= uRingSlots[ring].y) return;                   // full (the command pass clamps the count)
    uint o = (uRingSlots[ring].x + k) * 10u;
    float tint = unit(h5);
    vec3 color = mix(vec3(0.30, 0.52, 0.13), vec3(0.50, 0.62, 0.20), tint);
    if (tint > 0.93) color = vec3(0.66, 0.62, 0.36);      // a few dry blades
    inst[o + 0u] = xy.x; inst[o + 1u] = xy.y; inst[o + 2u] = z;
    inst[o + 3u] = unit(h2) * 6.28318530718;
    inst[o + 4u] = uBladeShape.z + unit(h4) * uBladeShape.w;
    inst[o + 5u] = height;
    inst[o + 6u] = color.r; inst[o + 7u] = color.g; inst[o + 8u] = color.b;
    inst[o + 9u] = 0.0;
}
#endif
