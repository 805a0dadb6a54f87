// The camera-grid grass path's vertex stage (the grass reference's vs_wow_grass, made authoritative):
// grass.glsl with GRASS_GRID defined includes this instead of its instanced vertex stage and keeps
// its fragment stage. One draw per grass model of GRID_SIDE^2 * layers instances and no instance
// buffer: gl_InstanceID gives the slot (camera-centred, 2.5 units apart) and the layer (the slot's
// n-th blade of this model); the control texture says how many blades of which model grow in the
// slot's world cell, the height atlas where the ground is (wowgrass/grid.py, docs/grid.md).
// With GRID_CAPTURE defined, each instance also writes its blade root and cell for transform
// feedback (tests read the grid back).
// Frame values (matrices, time, wind, camera) come from frame.glsl's block, as for the instanced path.
#include "sway.glsl"

uniform vec2 uModelZ;                   // the model's mesh z min and max (sway height fraction)
uniform usampler2DArray uGridControl;   // per tile (layer): (A, B) texels, 4 x (model | count << 16)
uniform sampler2DArray uGridHeights;    // per tile (layer): 257 x 257 absolute heights
uniform isampler2D uGridTiles;          // 64 x 64 tiles: (layer or -1, first slot i, first slot j, 0)
uniform uint uGridModel;                // the model this draw is for (index in the grid's model table)

in uvec4 in_mesh;                       // the model's vertex: xyz float bits, uv as half2
out vec4 v_data;                        // uv, ring * 2 + fade, height fraction (grass.glsl's fragment stage)
#if defined GRID_CAPTURE
out vec4 t_root;                        // blade root (world xyz) and 1, or 0s for a dropped slot
out vec4 t_cell;                        // lattice cell (i, j), blade index in the slot, model
out vec4 t_vertex;                      // this vertex in the world (wind included)
#endif

float GrassHash(vec2 p) {
    return fract(sin(dot(p, vec2(127.1, 311.7))) * 43758.5453);
}

// Lattice cells enter the hashes modulo 256 (exact small integers): dot(p, (127.1, 311.7)) stays
// below 1.2e5, where float32 keeps 1/128 rad of sin's argument, instead of ~3e6 near the map's edge
// (17,066 units: cell 6,826) where one float32 step is 0.25 rad and the hash degenerates. The
// pattern repeats every 640 units, beyond the grid's 452.
vec2 gridHashCell(vec2 cell) {
    return mod(cell, 256.0);
}

// The tile of global ADT cell (row, column), or layer -1 where none is resident.
ivec4 gridTileOf(ivec2 rc) {
    if (any(lessThan(rc, ivec2(0))) || any(greaterThanEqual(rc, ivec2(8192)))) return ivec4(-1);
    return texelFetch(uGridTiles, ivec2(rc.y >> 7, rc.x >> 7), 0);
}

// Global ADT cell coordinates (row southwards from X, column eastwards from Y) of world XY.
vec2 gridCellCoords(vec2 xy) {
    return (vec2(WOW_ZEROPOINT) - xy) / WOW_UNIT_SIZE;
}

float gridAtlas(int layer, int row, int col) {
    return texelFetch(uGridHeights, ivec3(col, row, layer), 0).r;
}

// Terrain height at world XY on the cell's 4-triangle fan (wowgrass.grid.fan_heights). A blade may
// stand up to 0.9 units outside its owner's ADT cell: past the edge of the resident world its
// owner's tile (ownerRC: a global ADT cell of it) is extended from its edge cell instead.
float gridTerrainHeight(vec2 xy, ivec2 ownerRC) {
    vec2 g = gridCellCoords(xy);
    ivec2 rc = ivec2(floor(g));
    ivec4 tile = gridTileOf(rc);
    if (tile.x < 0) {
        rc = ownerRC;
        tile = gridTileOf(rc);
    }
    vec2 l = g - vec2((rc >> 7) << 7);
    ivec2 c = clamp(ivec2(floor(l)), ivec2(0), ivec2(127));
    vec2 f = clamp(l - vec2(c), 0.0, 1.0) - 0.5;   // (dv south, du east)
    int r2 = 2 * c.x, c2 = 2 * c.y;
    float tl = gridAtlas(tile.x, r2, c2), tr = gridAtlas(tile.x, r2, c2 + 2);
    float bl = gridAtlas(tile.x, r2 + 2, c2), br = gridAtlas(tile.x, r2 + 2, c2 + 2);
    float hc = gridAtlas(tile.x, r2 + 1, c2 + 1);
    float a, b;
    if (abs(f.x) >= abs(f.y)) {
        if (f.x <= 0.0) { a = tr - tl; b = 2.0 * hc - tl - tr; }          // north
        else            { a = br - bl; b = bl + br - 2.0 * hc; }          // south
    } else {
        if (f.y <= 0.0) { a = 2.0 * hc - tl - bl; b = bl - tl; }          // west
        else            { a = tr + br - 2.0 * hc; b = br - tr; }          // east
    }
    return hc + a * f.y + b * f.x;
}

void gridDrop() {
    gl_Position = vec4(0.0, 0.0, 2.0, 1.0);   // outside the clip volume: the blade is dropped
    v_data = vec4(0.0);
#if defined GRID_CAPTURE
    t_root = vec4(0.0);
    t_cell = vec4(0.0);
    t_vertex = vec4(0.0);
#endif
}

void main() {
    // the frame's grass parameters with the reference's grid sway: 0.22 units along (1, 0.35)
    mat4 uGrassParams = grassParams(uModelZ);
    uGrassParams[1].z = GRID_WIND_AMPLITUDE;
    uGrassParams[2].zw = vec2(GRID_SWAY_X, GRID_SWAY_Y);
    const int SLOTS = GRID_SIDE * GRID_SIDE;
    int slot = gl_InstanceID % SLOTS;
    int layer = gl_InstanceID / SLOTS;
    int gx = slot % GRID_SIDE - GRID_HALF;
    int gy = slot / GRID_SIDE - GRID_HALF;
    vec2 cell = floor(uGrassParams[0].xy / GRID_SPACING) + vec2(gx, gy);
    // the grid's corners lie beyond the draw distance: drop them before any texture fetch
    if (distance((cell + 0.5) * GRID_SPACING, uGrassParams[0].xy) >= uGrassParams[0].w + GRID_SPACING) {
        gridDrop();
        return;
    }

    // the ADT cell holding the anchor owns the lattice cell; its tile's control texel says what grows
    ivec2 ownerRC = ivec2(floor(gridCellCoords((cell + GRID_ANCHOR) * GRID_SPACING)));
    ivec4 tile = gridTileOf(ownerRC);
    if (tile.x < 0) { gridDrop(); return; }
    ivec2 local = ivec2(cell) - tile.yz;
    uvec4 ctl = texelFetch(uGridControl, ivec3(local.y, local.x, tile.x), 0);
    uint start = 0u, count = 0u;
    for (int k = 0; k < 4; ++k) {   // blades of earlier channels come first in the slot
        uint n = ctl[k] >> 16;
        if (count == 0u && n > 0u && (ctl[k] & 0xFFFFu) == uGridModel) count = n;
        else if (count == 0u) start += n;
    }
    if (uint(layer) >= count) { gridDrop(); return; }

    // the reference's hashes; blade g > 0 of a slot hashes its cell moved by g * (0.618, 0.414)
    float g = float(start + uint(layer));
    vec2 p = gridHashCell(cell) + g * vec2(0.6180340, 0.4142136);
    vec2 jitter = vec2(GrassHash(p), GrassHash(p + vec2(61.7, 23.3)));
    vec2 worldXY = (cell + jitter * GRID_JITTER) * GRID_SPACING;
    float d = distance(worldXY, uGrassParams[0].xy);
    // the LOD rings thin the grid as they thin the instanced path (hash of the cell and blade)
    float ringFade = grassRingFade(d, grassInstanceHash(uvec3(ivec3(ivec2(cell), int(g)))));
    if (d >= uGrassParams[0].w || ringFade <= 0.0) { gridDrop(); return; }
    float ground = gridTerrainHeight(worldXY, ownerRC);
    float seed  = GrassHash(p + vec2(41.41, 17.17));   // yaw
    float phase = GrassHash(p + vec2(3.71, 53.9));     // independent animation phase

    vec3 in_position = uintBitsToFloat(in_mesh.xyz);
    float height = grassHeightFraction(in_position.z, uGrassParams);
    float top = grassFalloff(height, uGrassParams[1].w);
    float yaw = seed * 6.2831853;
    float c = cos(yaw), s = sin(yaw);
    vec2 turned = vec2(c * in_position.x - s * in_position.y, s * in_position.x + c * in_position.y);
    // the reference's sway: sin(time * 1.7 + phase * 2 pi) * 0.22 * top along (1, 0.35), in world space
    vec2 wind = grassWind(top, phase * 6.2831853, uGrassParams[1].x, uGrassParams[1].y,
                          uGrassParams[1].z * uGrassParams[3].z, uGrassParams[2].zw, worldXY,
                          normalize(vec2(WOW_GRASS_GUST_DIR_X, WOW_GRASS_GUST_DIR_Y)));
    vec3 world = vec3(worldXY + turned + wind, ground + in_position.z);
    gl_Position = uViewProj * vec4(world, 1.0);
    v_data = vec4(unpackHalf2x16(in_mesh.w), float(grassRing(d)) * 2.0 + grassFadeAt(d, uGrassParams) * ringFade,
                  height);
#if !defined SHADOW_PASS && !defined WIREFRAME
    v_shadow = shadowFactor(world, d);   // the sun's shadow map (grass.glsl declares it)
#endif
#if defined GRID_CAPTURE
    t_root = vec4(worldXY, ground, 1.0);
    t_cell = vec4(cell, g, float(uGridModel));
    t_vertex = vec4(world, 1.0);
#endif
}
