#version 330 core
// Liquid surfaces (render/sources/liquids.py): every resident tile's water, ocean, magma and
// slime in one draw after the opaque sources, blended over them. A vertex carries its kind and
// the water's depth above the terrain there: shallow water lets the ground show, deep water is
// its own colour (merged quads of flat, saturated cells: render/world/liquid_tiles.py). Textures are the LiquidType frames (30, one every 60 ms, cross-faded), or the
// kind's colour where the data has none; water and ocean also ripple (two scrolling wave normals)
// and reflect the sky and the sun. Magma and slime are opaque and glow a little.

#include "frame.glsl"

#if defined VERTEX_SHADER

in vec3 in_position;
in float in_depth;
in float in_kind;
in vec2 in_uv;
in vec3 in_tex;   // texel (x, y) in the tile's depth map and its slice; slice < 0: in_depth

out vec3 v_world;
out float v_depth;
flat out int v_kind;
out vec2 v_uv;
out vec2 v_tex;
flat out float v_slice;
out float v_dist;

void main() {
    v_world = in_position;
    gl_Position = uViewProj * vec4(in_position, 1.0);
    v_depth = in_depth;
    v_kind = int(in_kind + 0.5);
    v_uv = in_uv;
    v_tex = in_tex.xy;
    v_slice = in_tex.z;
    v_dist = distance(in_position, uCameraPos);
}

#elif defined FRAGMENT_SHADER
#include "lighting.glsl"
#include "shadow.glsl"

uniform sampler2DArray uFrames;   // kind * 30 + frame
uniform vec4 uHasTexture;         // per kind: 1 when its frames are in uFrames
uniform float uFrameSeconds;      // one texture frame lasts this long (the client: 60 ms)
uniform vec4 uKindColour[4];      // rgb and deep-water opacity of each kind
uniform vec4 uDepthRange;         // per kind: depth (world units) at which the liquid is fully its colour
uniform sampler2DArray uDepthMaps; // a tile's depth at its outer vertices (129 a side), over uDepthMapScale
uniform float uDepthMapScale;

in vec3 v_world;
in float v_depth;
flat in int v_kind;
in vec2 v_uv;
in vec2 v_tex;
flat in float v_slice;
in float v_dist;
out vec4 f_color;

// A ripple of k radians a unit, over a pixel that spans w units: 1 while the pixel resolves it,
// fading to 0 (the wave's mean) before it would alias into bands on far water.
float resolved(float k, float w) {
    return 1.0 - smoothstep(0.08, 0.3, k * w * 0.15915494);
}

void main() {
#if defined WIREFRAME
    f_color = vec4(0.35, 0.65, 0.95, 1.0);
#else
    // a joined quad may span a tile, and distance is not linear across it: per fragment there
    float dist = v_slice == -1.0 ? v_dist : distance(v_world, uCameraPos);
    int k = clamp(v_kind, 0, 3);
    bool wet = k < 2;                 // water and ocean ripple and reflect
    float t = uTime;
    // the screen footprint (world units and uv a pixel), taken before any branch
    float fw = max(length(dFdx(v_world.xy)), length(dFdy(v_world.xy)));
    float fuv = max(length(dFdx(v_uv)), length(dFdy(v_uv)));
    vec2 w1 = v_world.xy * 0.41 + vec2(t * 0.9, t * 0.55);
    vec2 w2 = v_world.xy * vec2(0.23, 0.29) - vec2(t * 0.6, -t * 0.8);
    float a1 = resolved(0.41, fw);
    vec2 slope = wet ? 0.08 * vec2(a1 * cos(w1.x) + 0.6 * resolved(0.42, fw) * cos(w2.y + w1.y * 0.3),
                                   a1 * sin(w1.y) + 0.6 * resolved(0.23, fw) * sin(w2.x)) : vec2(0.0);
    vec2 uv = v_uv + slope * 0.15 + (wet ? vec2(0.0) : vec2(t * 0.01, t * 0.004));
    vec3 base;
    if (uHasTexture[k] > 0.5) {
        float step = t / uFrameSeconds;
        float frame = mod(floor(step), 30.0);
        float f0 = float(k) * 30.0 + frame;
        float f1 = float(k) * 30.0 + mod(frame + 1.0, 30.0);
        base = mix(texture(uFrames, vec3(uv, f0)).rgb, texture(uFrames, vec3(uv, f1)).rgb, fract(step));
    } else {
        float grain = 0.5 + 0.5 * resolved(25.0, fuv) * sin(uv.x * 25.0 + slope.x * 30.0) * sin(uv.y * 23.0 - slope.y * 30.0);
        base = uKindColour[k].rgb * (0.85 + 0.3 * grain);
    }
    if (wet && uWaterLight[0].w > 0.5) {
        // the light tables' river (water) or ocean colours, shallow to deep; the frames' ripples
        // kept as brightness (view --clock)
        float d = smoothstep(0.0, uDepthRange[k], v_depth);
        float lum = dot(base, vec3(0.3333));
        base = mix(uWaterLight[k * 2].rgb, uWaterLight[k * 2 + 1].rgb, d) * (0.7 + 0.6 * lum);
    }
    vec3 n = normalize(vec3(-slope, 1.0));
    vec3 view = normalize(uCameraPos - v_world);
    float sh = shadowFactor(v_world, dist);
    vec3 c;
    float alpha;
    if (wet) {
        float fresnel = 0.04 + 0.96 * pow(1.0 - max(dot(n, view), 0.0), 5.0);
        vec3 lit = base * (uAmbient + uSunColor * max(dot(n, uSunDir), 0.0) * sh);
        vec3 h = normalize(uSunDir + view);
        vec3 spec = uSunColor * pow(max(dot(n, h), 0.0), 90.0) * 1.6 * sh;
        c = mix(lit, uFogColor, 0.55 * fresnel) + spec;
        // a joined quad's depth from its tile's map (bilinear between the vertices a cell has)
        float depth = v_slice >= 0.0
            ? texture(uDepthMaps, vec3((v_tex + 0.5) / 129.0, v_slice)).r * uDepthMapScale : v_depth;
        float deep = smoothstep(0.0, uDepthRange[k], depth);
        alpha = clamp(mix(0.22, uKindColour[k].a, deep) + 0.5 * fresnel, 0.0, 1.0);
    } else {
        float glow = k == 2 ? 0.55 : 0.2;
        c = base * (glow + (1.0 - glow) * (uAmbient + uSunColor * max(n.z * uSunDir.z, 0.0) * sh));
        alpha = 1.0;
    }
    f_color = vec4(applyFog(c, dist), alpha);
#endif
}
#endif
