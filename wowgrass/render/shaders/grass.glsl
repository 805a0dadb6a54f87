#version 330 core
#extension GL_ARB_shading_language_packing : require
// Instanced ground-effect grass (the grass reference's "M2 instanced path").
// One draw per model: the model's mesh per vertex (16 bytes, one attribute: the vertex stage's
// cost on the H200 follows the number of attributes fetched more than their bytes), the bundle's 16-byte instances per instance
// (vertex format "3f 2u2/i": world position, yaw * 65536 / 2pi, scale * 4096; with INSTANCE_PACKED
// the same bytes as one "4u4/i" attribute). With INSTANCE_MAT4 defined it reads the grass reference's 64-byte
// matrices instead (benchmarks compare them).

// Frame values (matrices, time, wind, rings) come from frame.glsl's block; per draw only the
// model's z range (uModelZ). The LOD rings (rings.glsl) thin and dissolve instances here too, so
// the GPU-culled path and the CPU fallback draw the same picture.
//
// GRASS_CLIENT (`view --look client`, docs/view.md): what the clients draw (client.md section 5).
// Each instance carries 16 more bytes (i_extra: render/world/client_look.py): its vertex colour
// (MCCV doubled, MCSH darkening applied), the terrain triangle's normal and the doodad's flags.
// No sway; lit by the ground's normal; flag 0x1 models stood along the slope; the fade a linear
// alpha ramp over the last 15% of the draw distance under an alpha test at 128 of 255.

#include "frame.glsl"

#if defined VERTEX_SHADER
#include "sway.glsl"
#include "rings.glsl"
#if !defined SHADOW_PASS && !defined WIREFRAME
#include "shadow.glsl"
out float v_shadow;           // the sun's shadow map at the vertex (1: lit), both vertex stages
#endif
#endif

#if defined VERTEX_SHADER && defined GRASS_GRID
// the camera-grid path (view --grass grid): its own vertex stage
#include "grass_grid.glsl"

#elif defined VERTEX_SHADER

uniform vec2 uModelZ;         // the model's mesh z min and max (sway height fraction)

in uvec4 in_mesh;             // the model's vertex in one attribute: xyz float bits, uv as half2
#if defined INSTANCE_MAT4
in mat4 i_instance;          // model -> world, the grass reference's layout
#elif defined INSTANCE_PACKED
in uvec4 i_packed;           // the same 16 bytes as one attribute: xyz float bits, yaw | scale << 16
#else
in vec3 i_pos;               // world X (north), Y (west), Z (up)
in uvec2 i_yaw_scale;        // yaw / (2 pi) * 65536, scale * 4096
#endif

out vec4 v_data;              // uv, ring * 2 + fade, height fraction: one varying (vertex output bandwidth)
#if defined GRASS_CLIENT
in uvec4 i_extra;             // colour RGBA8, terrain normal (snorm16 x, y; z up), flags (0x1 along the slope)
#if !defined SHADOW_PASS && !defined WIREFRAME
out vec3 v_colour;
out vec3 v_normal;
#endif

// FrozenClient's SlopeBasis and RotateBasisAboutZ (FUN_007b1b50): rows n x u, u = (0, n.z, -n.y)
// normalised, and n, the first two turned about z; a model vertex v lands at
// v.x * row0 + v.y * row1 + v.z * n. (On flat ground row 0 is -x: the decode's frame mirrors.)
vec3 alongSlope(vec3 v, vec3 n, float c, float s) {
    float len = length(vec2(n.z, n.y));
    float inv = len != 0.0 ? 1.0 / len : 0.0;
    vec3 u = vec3(0.0, n.z * inv, -n.y * inv);
    vec3 r0 = vec3(n.y * u.z - n.z * u.y, -u.z * n.x, u.y * n.x);
    return v.x * (r0 * c + u * s) + v.y * (u * c - r0 * s) + v.z * n;
}
#endif

void main() {
#if defined INSTANCE_MAT4
    vec2 instanceXY = i_instance[3].xy;
#elif defined INSTANCE_PACKED
    vec3 i_pos = uintBitsToFloat(i_packed.xyz);
    uvec2 i_yaw_scale = uvec2(i_packed.w & 0xFFFFu, i_packed.w >> 16);
    vec2 instanceXY = i_pos.xy;
#else
    vec2 instanceXY = i_pos.xy;
#endif
    // the instance's distance once: draw-distance drop and fade (the same sway.glsl math as
    // grassBeyondDrawDistance / grassFade), the height fraction once: sway weight and shading
    mat4 uGrassParams = grassParams(uModelZ);
    float d = distance(instanceXY, uGrassParams[0].xy);
#if defined INSTANCE_MAT4
    float ringFade = 1.0;   // the grass reference's 64-byte mat4 layout is for layout comparisons only: no rings
#else
    float ringFade = grassRingFade(d, grassInstanceHash(floatBitsToUint(i_pos)));
#endif
#if defined GRASS_CLIENT
    ringFade = 1.0;   // the clients have no density rings
#endif
    if (d >= uGrassParams[0].w || ringFade <= 0.0) {
        gl_Position = vec4(0.0, 0.0, 2.0, 1.0);   // outside the clip volume: the blade is dropped
        v_data = vec4(0.0);
        return;
    }
    vec3 in_position = uintBitsToFloat(in_mesh.xyz);
    vec2 in_uv = unpackHalf2x16(in_mesh.w);
    float height = grassHeightFraction(in_position.z, uGrassParams);
    vec3 p = in_position;
#if defined INSTANCE_MAT4
    vec2 yawCS = normalize(i_instance[0].xy);
#else
    float yaw = float(i_yaw_scale.x) * (6.28318530718 / 65536.0);
    float scale = float(i_yaw_scale.y) * (1.0 / 4096.0);
    float c = cos(yaw), s = sin(yaw);
    vec2 yawCS = vec2(c, s);
#endif
#if defined GRASS_CLIENT
    // no wind; upright and turned, or (flag 0x1) along the terrain's normal
    vec2 nxy = unpackSnorm2x16(i_extra.y);
    vec3 n = vec3(nxy, sqrt(max(1.0 - dot(nxy, nxy), 0.0)));
    vec3 turned = (i_extra.z & 1u) != 0u ? alongSlope(p, n, c, s) : vec3(c * p.x - s * p.y, s * p.x + c * p.y, p.z);
    vec3 world = i_pos + turned * scale;
    // opaque to the fade start (3.3.5: 85% of the draw distance; 1.12, 2.4.3: 52.5 of 70), gone at
    // the draw distance: an alpha ramp (the clients' c9 constant)
    float fade = clamp((uGrassParams[0].w - d) / max(uGrassParams[0].w - uGrassParams[0].z, 1e-3), 0.0, 1.0);
    gl_Position = uViewProj * vec4(world, 1.0);
    v_data = vec4(in_uv, fade, height);
#if !defined SHADOW_PASS && !defined WIREFRAME
    v_colour = unpackUnorm4x8(i_extra.x).rgb;
    v_normal = n;
#endif
#else
    p.xy += grassSwayOffset(height, instanceXY, uGrassParams, grassWindInModel(yawCS));
#if defined INSTANCE_MAT4
    vec3 world = (i_instance * vec4(p, 1.0)).xyz;
#else
    vec3 world = i_pos + vec3(c * p.x - s * p.y, s * p.x + c * p.y, p.z) * scale;
#endif
    gl_Position = uViewProj * vec4(world, 1.0);
    v_data = vec4(in_uv, float(grassRing(d)) * 2.0 + grassFadeAt(d, uGrassParams) * ringFade, height);
#endif
#if !defined SHADOW_PASS && !defined WIREFRAME
    v_shadow = shadowFactor(world, d);   // per vertex: a blade is a few pixels wide
#endif
}

#elif defined FRAGMENT_SHADER
#include "lighting.glsl"

uniform sampler2D uTexture;
uniform float uAlphaRef;      // alpha test threshold (0.5 without multisampling)

in vec4 v_data;
#if !defined SHADOW_PASS && !defined WIREFRAME
in float v_shadow;
#if defined GRASS_CLIENT
in vec3 v_colour;
in vec3 v_normal;
#endif
#endif
out vec4 f_color;

// Ordered 4x4 dither: fades blades out between fade_start and the draw distance without blending.
// The Bayer matrix (0 8 2 10 / 12 4 14 6 / 3 11 1 9 / 15 7 13 5) from the bits of x ^ y and y,
// with no local array (which some drivers place in memory).
float bayer4(vec2 p) {
    uvec2 q = uvec2(p) & 3u;
    uint a = q.x ^ q.y;
    uint m = ((a & 1u) << 3) | ((q.y & 1u) << 2) | (a & 2u) | ((q.y & 2u) >> 1);
    return (float(m) + 0.5) / 16.0;
}

void main() {
    vec2 v_uv = v_data.xy;
    vec4 tex = texture(uTexture, v_uv);
#if defined GRASS_CLIENT
    // the alpha test at 128 of 255 on the texture's alpha times the distance fade
    if (tex.a * v_data.z < 128.0 / 255.0) discard;
    float a = 1.0;
#if defined SHADOW_PASS
    f_color = vec4(1.0);
#elif defined WIREFRAME
    f_color = vec4(0.55, 0.85, 0.35, 1.0);
#else
    // lit like the ground under it (its triangle's normal), coloured by the MCCV, MCSH darkening in it
    vec3 color = applyLightShadowed(tex.rgb * v_colour, v_normal, v_shadow);
    float zn = gl_FragCoord.z * 2.0 - 1.0;
    float dist = 2.0 * uNearFar.x * uNearFar.y / (uNearFar.y + uNearFar.x - zn * (uNearFar.y - uNearFar.x));
    f_color = vec4(applyFog(color, dist), a);
#endif
#else
    float ring = floor(v_data.z * 0.5);
    float v_fade = v_data.z - ring * 2.0, v_height = v_data.w;
    if (v_fade < 1.0 && v_fade <= bayer4(gl_FragCoord.xy)) discard;   // bayer4 < 1: only fading blades
    float a = tex.a;
#ifdef GRASS_A2C
    // alpha to coverage: sharpen alpha around the reference so edges stay crisp but antialiased
    a = clamp((a - uAlphaRef) / max(fwidth(a), 1e-4) + 0.5, 0.0, 1.0);
    if (a <= 0.0) discard;
#else
    if (a < uAlphaRef) discard;
    a = 1.0;
#endif
#if defined SHADOW_PASS
    f_color = vec4(1.0);   // depth only; the alpha test and the fade dither above shape the shadow
    return;
#elif defined WIREFRAME
    f_color = vec4(0.55, 0.85, 0.35, 1.0);
    return;
#else
    // grass is lit as an upward-facing surface, darker towards the root (self-shadowing)
    vec3 color = applyLightShadowed(tex.rgb, vec3(0.0, 0.0, 1.0), v_shadow) * mix(0.7, 1.08, v_height);
    if (uRingKeep.w > 0.0) {   // --debug-rings: ring 0 white, then yellow, orange, red
        vec3 tint = ring < 0.5 ? vec3(1.0) : ring < 1.5 ? vec3(1.0, 0.9, 0.1) : ring < 2.5 ? vec3(1.0, 0.5, 0.05) : vec3(0.9, 0.1, 0.1);
        color = mix(color, tint * (0.5 + 0.5 * v_height), 0.75);
    }
    // view depth stands for the distance here (grass is near; it saves a varying per vertex)
    float zn = gl_FragCoord.z * 2.0 - 1.0;
    float dist = 2.0 * uNearFar.x * uNearFar.y / (uNearFar.y + uNearFar.x - zn * (uNearFar.y - uNearFar.x));
    f_color = vec4(applyFog(color, dist), a);
#endif
#endif
}
#endif
