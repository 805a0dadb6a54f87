#version 330 core
// Terrain chunks: MCVT heights with the 4-triangle cell fans (holes left out of the index
// buffer), MCNR normals, up to four MTEX layers per chunk blended by the decoded MCAL alpha maps.
// Layer textures are one sampler2DArray per tile (one slice per MTEX name); the alpha maps are a
// second array with one RGBA slice per chunk (R, G, B = alpha of layers 1, 2, 3).

#include "frame.glsl"

#if defined VERTEX_SHADER

in vec3 in_position;
in vec3 in_normal;
in vec2 in_uv;          // 0..1 across the chunk (the alpha map's space)
in float in_chunk;      // alpha map slice
in vec4 in_layers;      // texture array slice per layer, -1 where the layer does not exist

out vec3 v_normal;
out vec2 v_uv;
flat out float v_chunk;
flat out vec4 v_layers;
out float v_dist;

void main() {
    gl_Position = uViewProj * vec4(in_position, 1.0);
    v_normal = in_normal;
    v_uv = in_uv;
    v_chunk = in_chunk;
    v_layers = in_layers;
    v_dist = distance(in_position, uCameraPos);
}

#elif defined FRAGMENT_SHADER
#include "lighting.glsl"

uniform sampler2DArray uLayers;
uniform sampler2DArray uAlpha;
uniform float uTexRepeat;     // texture repeats across one chunk

in vec3 v_normal;
in vec2 v_uv;
flat in float v_chunk;
flat in vec4 v_layers;
in float v_dist;
out vec4 f_color;

vec3 layer(float slice, vec2 uv) {
    return texture(uLayers, vec3(uv, slice)).rgb;
}

void main() {
    vec2 tuv = v_uv * uTexRepeat;
    // sample the 64x64 alpha map at texel centres: texel i covers [i/64, (i+1)/64)
    vec3 alpha = texture(uAlpha, vec3(v_uv * (63.0 / 64.0) + 0.5 / 64.0, v_chunk)).rgb;
    vec3 albedo = v_layers.x >= 0.0 ? layer(v_layers.x, tuv) : vec3(0.45, 0.42, 0.35);
    if (v_layers.y >= 0.0) albedo = mix(albedo, layer(v_layers.y, tuv), alpha.r);
    if (v_layers.z >= 0.0) albedo = mix(albedo, layer(v_layers.z, tuv), alpha.g);
    if (v_layers.w >= 0.0) albedo = mix(albedo, layer(v_layers.w, tuv), alpha.b);
    f_color = vec4(applyFog(applyLight(albedo, v_normal), v_dist), 1.0);
}
#endif
