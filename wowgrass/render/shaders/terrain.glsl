#version 330 core
#ifdef GL_ARB_shader_draw_parameters  // gl_BaseInstanceARB: the chunk's level, for the debug colours
#extension GL_ARB_shader_draw_parameters : enable
#endif
// Terrain chunks: MCVT heights (level 0: the 4-triangle cell fans; levels 1-4: grids of the outer
// vertices; holes left out of the index buffers), MCNR normals, up to four MTEX layers per chunk
// blended by the decoded MCAL alpha maps. Every resident tile shares two texture arrays
// (render/sources/terrain_arenas.py's TerrainArena): MTEX layers, one slice per name; alpha atlases, one
// 1024x1024 slice per tile of 16x16 chunk maps (R, G, B = alpha of layers 1, 2, 3; A = the MCSH
// shadow bit). FAR_TILE: a far tile (render/sources/terrain_arenas.py's FarArena): no layers, no alpha
// atlas; one low-resolution colour slice per tile (16x16 chunks of 16x16 texels, the layers' mean
// colours blended by the alpha maps, A = the MCSH shadow's share). Geomorphing: see
// wowgrass/render/sources/terrain_mesh.py.

#include "frame.glsl"

#if defined VERTEX_SHADER
#include "geomorph.glsl"

uniform vec3 uLodEye;     // the main camera (the same morph in every view and pass)
uniform vec4 uLodBands;   // ends of the distance bands of levels 0..3
uniform float uLodZScale; // heights count this much in the LOD distance
uniform float uLodMorph;  // 0: no geomorphing (levels pop; for comparison)

in float in_height;     // (x, y come from in_grid)
in vec2 in_grid;        // (column, row) on the map-wide half-cell grid: whole numbers
in float in_morph_height; // the collapse target's height
in float in_chunk;      // the chunk's place in the alpha atlases: slot * 256 + MCNK index
in vec4 in_normal;      // xyz; w: the level on whose grid this vertex is odd (4: never morphs)
in vec4 in_morph_normal; // xyz: the collapse target's normal
in vec4 in_layers;      // texture array slice per layer, -1 where the layer does not exist
in vec2 in_uv;          // 0..1 across the chunk (the alpha map's space)

out vec3 v_normal;
out vec2 v_uv;
flat out float v_chunk;
flat out vec4 v_layers;
out float v_dist;
out vec3 v_world;
flat out float v_level; // the chunk's level (debug colouring), -1 where not known

vec2 gridToWorld(vec2 g) {
    return vec2(WOW_ZEROPOINT - g.y * WOW_HALF_UNIT, WOW_ZEROPOINT - g.x * WOW_HALF_UNIT);
}

void main() {
    int level = int(in_normal.w + 0.5);
    vec3 d = vec3(gridToWorld(in_grid), in_height) - uLodEye;
    d.z *= uLodZScale;
    // a hair early (0.05 units), so the chunk box test of terrain_lod.glsl never switches to the
    // coarser level while a vertex of the finer one is a rounding error short of collapsed
    float k = 0.0;
    if (level < 4 && uLodMorph > 0.5)
        k = morph_factor(length(d) + 0.05, level == 0 ? 0.0 : uLodBands[level - 1], uLodBands[level]);
    vec2 g = level < 4 ? morph_grid(in_grid, exp2(float(level)), k) : in_grid;
    bool done = k >= 1.0;  // exactly the target's values, not mix()'s rounding of them
    float h = done ? in_morph_height : mix(in_height, in_morph_height, k);
    vec3 n = done ? in_morph_normal.xyz : mix(in_normal.xyz, in_morph_normal.xyz, k);
    vec3 p = vec3(gridToWorld(g), h);
    gl_Position = uViewProj * vec4(p, 1.0);
    v_normal = n;
    v_uv = in_uv - (in_grid - g) / 16.0;  // a chunk is 16 grid steps
    v_chunk = in_chunk;
    v_layers = in_layers;
    v_dist = distance(p, uCameraPos);
    v_world = p;
#ifdef GL_ARB_shader_draw_parameters
    v_level = float(gl_BaseInstanceARB);
#else
    v_level = -1.0;
#endif
}

#elif defined FRAGMENT_SHADER && defined SHADOW_PASS
void main() {}   // depth only: the sun's shadow map

#elif defined FRAGMENT_SHADER && defined WIREFRAME
out vec4 f_color;
void main() { f_color = vec4(0.45, 0.5, 0.38, 1.0); }

#elif defined FRAGMENT_SHADER
#include "lighting.glsl"
#include "shadow.glsl"

#ifdef FAR_TILE
uniform sampler2DArray uFarColour;  // a slice per far tile: 16x16 chunks of FAR_COLOUR texels
#else
uniform sampler2DArray uLayers;
uniform sampler2DArray uAlpha;
#endif
uniform float uTexRepeat;     // texture repeats across one chunk
uniform float uLodDebug;      // 1: colour by LOD level
uniform float uMcsh;          // 1: darken where the ADT's baked MCSH shadow bit is set
#ifndef FAR_TILE
// per-cell marks (render/sources/cell_marks.py CellMarks): a 128x128 slice per slot, a texel per
// cell (R: palette index + 1, G: a bit per mark slot), drawn where uMarksShown asks; what the
// slots mean and their colours are the caller's
uniform sampler2DArray uCells;
uniform int uMarksShown;      // SHOW_* bits; 0: none
uniform vec3 uPalette[20];    // the R channel's colours (index % 20)
uniform vec4 uMarkColours[CELL_MARK_SLOTS];  // per slot: RGB, how much is mixed in
uniform vec2 uMarkStyles[CELL_MARK_SLOTS];   // per slot: MARK_* (-1: not drawn), a hatch's extra
uniform vec4 uBrush;          // world x, y, radius, 1: the brush's circle
uniform vec4 uPick;           // world X, Y of the picked cell's north-west corner, its size, 1: shown
#endif

in vec3 v_normal;
in vec2 v_uv;
flat in float v_chunk;
flat in vec4 v_layers;
in float v_dist;
in vec3 v_world;
flat in float v_level;
out vec4 f_color;

// level 0..4: red, yellow, green, blue, violet
const vec3 LOD_COLORS[5] = vec3[5](vec3(0.95, 0.25, 0.2), vec3(0.95, 0.8, 0.2), vec3(0.3, 0.85, 0.3),
                                    vec3(0.2, 0.55, 0.95), vec3(0.6, 0.35, 0.95));

#ifndef FAR_TILE
vec3 layer(float slice, vec2 uv) {
    return texture(uLayers, vec3(uv, slice)).rgb;
}

// uMarksShown's bits: the palette, slot i at 2 << i, the grids after the slots
const int SHOW_PALETTE = 1, SHOW_CHUNK_GRID = 2 << CELL_MARK_SLOTS, SHOW_TILE_GRID = 4 << CELL_MARK_SLOTS;
const int MARK_FILL = 0, MARK_HATCH = 1, MARK_BORDER = 2;  // cell_marks.MARK_STYLES

// 1 within ``w`` pixels of a whole-number line of ``x`` (screen-space width)
float gridLine(vec2 x, float w) {
    vec2 d = abs(fract(x - 0.5) - 0.5) / max(fwidth(x), vec2(1e-6));
    return 1.0 - clamp(min(d.x, d.y) - w + 0.5, 0.0, 1.0);
}

uvec2 cellsAt(ivec2 c, float slot) {
    return uvec2(texelFetch(uCells, ivec3(clamp(c, ivec2(0), ivec2(127)), int(slot)), 0).rg * 255.0 + 0.5);
}

// the albedo under the marks the caller shows (per-cell data, no geometry per cell)
vec3 cellMarks(vec3 albedo, vec2 chunk, float slot) {
    vec2 cf = v_uv * 8.0;                       // cell units within the chunk: x east, y south
    ivec2 cell = ivec2(chunk) * 8 + ivec2(clamp(floor(cf), 0.0, 7.0));
    uvec2 t = cellsAt(cell, slot);
    int flags = int(t.y);
    if ((uMarksShown & SHOW_PALETTE) != 0 && t.x > 0u)
        albedo = mix(albedo, uPalette[int(t.x - 1u) % 20], 0.55);
    for (int i = 0; i < CELL_MARK_SLOTS; i++) {
        int style = int(uMarkStyles[i].x);
        if ((uMarksShown & (2 << i)) == 0 || style < 0) continue;
        int bit = 1 << i;
        vec4 look = uMarkColours[i];
        if (style == MARK_BORDER) {
            // the marked cells' neighbours: their edges facing a marked cell
            vec2 f = fract(cf);
            float band = 0.0;
            if (f.x < 0.2 && (int(cellsAt(cell - ivec2(1, 0), slot).y) & bit) != 0 && cell.x % 128 != 0) band = 1.0;
            if (f.x > 0.8 && (int(cellsAt(cell + ivec2(1, 0), slot).y) & bit) != 0 && cell.x % 128 != 127) band = 1.0;
            if (f.y < 0.2 && (int(cellsAt(cell - ivec2(0, 1), slot).y) & bit) != 0 && cell.y % 128 != 0) band = 1.0;
            if (f.y > 0.8 && (int(cellsAt(cell + ivec2(0, 1), slot).y) & bit) != 0 && cell.y % 128 != 127) band = 1.0;
            albedo = mix(albedo, look.rgb, look.a * band);
        } else if ((flags & bit) != 0) {
            float amount = look.a;
            if (style == MARK_HATCH)  // diagonal stripes: the ground under them stays readable
                amount += uMarkStyles[i].y * step(0.5, fract((v_world.x + v_world.y) * 0.5));
            albedo = mix(albedo, look.rgb, amount);
        }
    }
    if ((uMarksShown & SHOW_CHUNK_GRID) != 0)
        albedo = mix(albedo, vec3(1.0), 0.7 * gridLine(v_uv + chunk, 1.0));
    if ((uMarksShown & SHOW_TILE_GRID) != 0)
        albedo = mix(albedo, vec3(0.0, 0.9, 1.0), 0.9 * gridLine((v_uv + chunk) / 16.0, 2.0));
    if (uPick.w > 0.5) {   // the picked cell: its outline (X south is -, Y east is -)
        vec2 d = (uPick.xy - v_world.xy) / uPick.z;
        if (all(greaterThanEqual(d, vec2(0.0))) && all(lessThan(d, vec2(1.0))))
            albedo = mix(albedo, vec3(1.0, 1.0, 0.2), 0.9 * gridLine(d, 1.5));
    }
    if (uBrush.w > 0.5) {  // the brush: its circle, the inside lightly tinted
        float r = distance(v_world.xy, uBrush.xy);
        float ring = 1.0 - clamp(abs(r - uBrush.z) / max(fwidth(r), 1e-4) - 0.5, 0.0, 1.0);
        albedo = mix(albedo, vec3(1.0), 0.15 * step(r, uBrush.z));
        albedo = mix(albedo, vec3(1.0, 0.95, 0.3), ring);
    }
    return albedo;
}
#endif

void main() {
    float slot = floor(v_chunk / 256.0);
    float c = v_chunk - slot * 256.0;
    vec2 chunk = vec2(c - 16.0 * floor(c / 16.0), floor(c / 16.0));
#ifdef FAR_TILE
    // texel j of a chunk's block stands where the near tile samples the alpha at uv j / 15
    vec4 alpha = texture(uFarColour, vec3((chunk * 16.0 + 0.5 + v_uv * 15.0) / 256.0, slot));
    vec3 albedo = alpha.rgb;
#else
    vec2 tuv = v_uv * uTexRepeat;
    // sample the 64x64 alpha map at texel centres: texel i covers [i/64, (i+1)/64)
    // the chunk's 64x64 block of its tile's 1024x1024 atlas (16x16 chunks), sampled at texel
    // centres: texel i covers [i/64, (i+1)/64) of the chunk, and no filtering reaches a neighbour
    vec4 alpha = texture(uAlpha, vec3((chunk * 64.0 + 0.5 + v_uv * 63.0) / 1024.0, slot));
    vec3 albedo = v_layers.x >= 0.0 ? layer(v_layers.x, tuv) : vec3(0.45, 0.42, 0.35);
    if (v_layers.y >= 0.0) albedo = mix(albedo, layer(v_layers.y, tuv), alpha.r);
    if (v_layers.z >= 0.0) albedo = mix(albedo, layer(v_layers.z, tuv), alpha.g);
    if (v_layers.w >= 0.0) albedo = mix(albedo, layer(v_layers.w, tuv), alpha.b);
    if (uMarksShown != 0 || uBrush.w > 0.5 || uPick.w > 0.5) albedo = cellMarks(albedo, chunk, slot);
#endif
    if (uLodDebug > 0.5 && v_level >= 0.0) albedo = mix(albedo, LOD_COLORS[int(v_level)], 0.7);
    vec3 lit = applyLightShadowed(albedo, v_normal, shadowFactor(v_world, v_dist));
    lit *= 1.0 - 0.45 * uMcsh * alpha.a;  // baked MCSH: darker where the shadow bit is set
    f_color = vec4(applyFog(lit, v_dist), 1.0);
}
#endif
