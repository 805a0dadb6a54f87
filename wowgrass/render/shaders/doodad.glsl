#version 330 core
// The ADT's own MDDF doodads: static M2 meshes, instanced per (tile, model) with a static buffer
// of model matrices (MDDF placements carry full rotations and scales).

#include "frame.glsl"

#if defined VERTEX_SHADER

in vec3 in_position;
in vec3 in_normal;
in vec2 in_uv;
in mat4 i_model;

out vec3 v_normal;
out vec2 v_uv;
out float v_dist;
out vec3 v_world;

void main() {
    vec4 world = i_model * vec4(in_position, 1.0);
    v_world = world.xyz;
    gl_Position = uViewProj * world;
    v_normal = mat3(i_model) * in_normal;
    v_uv = in_uv;
    v_dist = distance(world.xyz, uCameraPos);
}

#elif defined FRAGMENT_SHADER
#include "lighting.glsl"
#include "shadow.glsl"

uniform sampler2D uTexture;
uniform float uAlphaRef;

in vec3 v_normal;
in vec2 v_uv;
in float v_dist;
in vec3 v_world;
out vec4 f_color;

void main() {
    vec4 tex = texture(uTexture, v_uv);
    if (tex.a < uAlphaRef) discard;   // the shadow pass too: leaves cast leaf-shaped shadows
#if defined WIREFRAME
    f_color = vec4(0.75, 0.6, 0.4, 1.0);
#elif !defined SHADOW_PASS
    vec3 n = gl_FrontFacing ? v_normal : -v_normal;
    f_color = vec4(applyFog(applyModelLightShadowed(tex.rgb, n, shadowFactor(v_world, v_dist)), v_dist), 1.0);
#endif
}
#endif
