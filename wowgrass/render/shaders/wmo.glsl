#version 330 core
// WMO groups (render/sources/wmo.py): one instanced draw per group over its placements in view
// (the compute pass wmo_cull.glsl writes the visible ones' matrices), textures in one array per
// WMO, per-vertex flags (render/world/wmo_models.py): 1 interior, 2 unlit, 4 alpha key,
// 8 vertex colours, 16 exterior-lit. Exterior groups take the sun (with its shadows); interior
// groups are lit by their MOCV colours, doubled as the client's shader does.

#include "frame.glsl"

#if defined VERTEX_SHADER

in vec3 in_position;
in vec3 in_normal;
in vec2 in_uv;
in vec4 in_colour;
in float in_layer;
in float in_flags;
in mat4 i_model;

out vec3 v_world;
out vec3 v_normal;
out vec2 v_uv;
out vec4 v_colour;
flat out float v_layer;
flat out int v_flags;
out float v_dist;

void main() {
    vec4 world = i_model * vec4(in_position, 1.0);
    v_world = world.xyz;
    gl_Position = uViewProj * world;
    v_normal = mat3(i_model) * in_normal;
    v_uv = in_uv;
    v_colour = in_colour;
    v_layer = in_layer;
    v_flags = int(in_flags + 0.5);
    v_dist = distance(world.xyz, uCameraPos);
}

#elif defined FRAGMENT_SHADER
#include "lighting.glsl"
#include "shadow.glsl"

uniform sampler2DArray uTextures;
uniform float uAlphaRef;
uniform bool uBlended;            // the group's blended batches (drawn after its solid ones)

in vec3 v_world;
in vec3 v_normal;
in vec2 v_uv;
in vec4 v_colour;
flat in float v_layer;
flat in int v_flags;
in float v_dist;
out vec4 f_color;

void main() {
    vec4 tex = texture(uTextures, vec3(v_uv, v_layer));
    if ((v_flags & 4) != 0 && tex.a < uAlphaRef) discard;   // alpha-keyed: the shadow pass too
#if defined WIREFRAME
    f_color = vec4(0.85, 0.72, 0.5, 1.0);
#elif !defined SHADOW_PASS
    vec3 n = normalize(gl_FrontFacing ? v_normal : -v_normal);
    vec3 c;
    if ((v_flags & 2) != 0) {
        c = tex.rgb;
    } else if ((v_flags & 1) != 0) {
        vec3 baked = (v_flags & 8) != 0 ? 2.0 * v_colour.rgb : vec3(0.75);
        c = tex.rgb * (baked + 0.3 * uAmbient);
    } else {
        c = applyModelLightShadowed(tex.rgb, n, shadowFactor(v_world, v_dist));
        if ((v_flags & 8) != 0) c *= mix(vec3(1.0), 2.0 * v_colour.rgb, 0.5);
    }
    f_color = vec4(applyFog(c, v_dist), uBlended ? tex.a : 1.0);
#endif
}
#endif
