#version 330 core
// The procedural meadow's grass blades: the lesson's segmented strips (2(N+1) vertices, height_t
// 0 at the root and 1 at the tip), instanced with its 40-byte per-instance record (position,
// rotation, width and height scale, colour tint), bent by the shared blade wind in every pass.
// Variants: WIREFRAME (line index buffer, flat colour), SHADOW_PASS (the sun's shadow map).

#include "frame.glsl"

#if defined VERTEX_SHADER
#include "blade_wind.glsl"

in vec3 in_blade;             // x across the blade, y up (0..1), height_t
in vec3 i_pos;                // root, world
in float i_rot;               // about +Z, radians
in vec2 i_scale;              // width, height (world units)
in vec3 i_color;

out vec3 v_world;
out vec3 v_normal;
out vec3 v_color;
out float v_height_t;

void main() {
    float c = cos(i_rot), s = sin(i_rot);
    vec3 world = i_pos + vec3(c * in_blade.x * i_scale.x, s * in_blade.x * i_scale.x, in_blade.y * i_scale.y);
    world = bladeWind(world, in_blade.z);
    v_world = world;
    v_normal = vec3(-s, c, 0.0);
    v_color = i_color;
    v_height_t = in_blade.z;
    gl_Position = uViewProj * vec4(world, 1.0);
}

#elif defined FRAGMENT_SHADER
in vec3 v_world;
in vec3 v_normal;
in vec3 v_color;
in float v_height_t;
out vec4 f_color;

#if defined SHADOW_PASS
void main() { f_color = vec4(1.0); }
#elif defined WIREFRAME
void main() { f_color = vec4(0.55, 0.85, 0.35, 1.0); }
#else
#include "lighting.glsl"
#include "shadow.glsl"

void main() {
    // a thin two-sided blade: its face toward the viewer, bent toward the sky (soft, grassy light)
    vec3 n = normalize(gl_FrontFacing ? v_normal : -v_normal);
    n = normalize(n * 0.6 + vec3(0.0, 0.0, 0.8));
    float dist = distance(v_world, uCameraPos);
    float sun = max(dot(n, uSunDir), 0.0) * shadowFactor(v_world, dist);
    vec3 albedo = v_color * mix(0.45, 1.05, v_height_t);   // darker toward the root
    vec3 color = albedo * (uAmbient + uSunColor * sun);
    f_color = vec4(applyFog(color, dist), 1.0);
}
#endif
#endif
