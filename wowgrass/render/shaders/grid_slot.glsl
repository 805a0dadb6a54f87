// The camera-grid path's per-slot decisions (docs/grid.md), shared by the compaction compute pass
// (grass_grid_cull.glsl) and the grid's vertex stage (grass_grid.glsl): which lattice cell a slot
// stands on, whether its tile is resident and what its control texel says, where blade g of the
// cell stands, and whether the draw distance and the LOD rings keep it. Needs frame.glsl and
// rings.glsl, and GRID_DEFINES (render/grid.py).

uniform usampler2DArray uGridControl;   // per tile (layer): (A, B) texels, 4 x (model | count << 16)
uniform sampler2DArray uGridHeights;    // per tile (layer): 257 x 257 absolute heights
uniform isampler2D uGridTiles;          // 64 x 64 tiles: (layer or -1, first slot i, first slot j, 0)
uniform sampler2D uGridModels;          // per model (256 a row): mesh z min, z max, bound centre z, bound radius

// The grid's model table entry of `model`: mesh z min, z max, bounding sphere centre z and radius.
vec4 gridModelInfo(uint model) {
    return texelFetch(uGridModels, ivec2(int(model & 255u), int(model >> 8)), 0);
}

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

// The lattice cell of grid slot `slot` (camera-centred: cell = floor(camera / 2.5) + offset).
vec2 gridSlotCell(int slot, vec2 camXY) {
    return floor(camXY / GRID_SPACING) + vec2(slot % GRID_SIDE - GRID_HALF, slot / GRID_SIDE - GRID_HALF);
}

// The global ADT cell owning lattice cell `cell`: the one holding its anchor.
ivec2 gridOwnerRC(vec2 cell) {
    return ivec2(floor(gridCellCoords((cell + GRID_ANCHOR) * GRID_SPACING)));
}

// The control texel of lattice cell `cell`; false where the cell is beyond the draw distance (the
// grid's corners: dropped before any texture fetch) or its tile is not resident.
bool gridSlotControl(vec2 cell, vec2 camXY, float drawDistance, out ivec2 ownerRC, out uvec4 ctl) {
    ownerRC = ivec2(0);
    ctl = uvec4(0u);
    if (distance((cell + 0.5) * GRID_SPACING, camXY) >= drawDistance + GRID_SPACING) return false;
    ownerRC = gridOwnerRC(cell);
    ivec4 tile = gridTileOf(ownerRC);
    if (tile.x < 0) return false;
    ivec2 local = ivec2(cell) - tile.yz;
    ctl = texelFetch(uGridControl, ivec3(local.y, local.x, tile.x), 0);
    return true;
}

// Blade `g` of a slot (its channels' blades in channel order): the channel's model and the layer
// of that model it is, or false where the slot holds fewer blades.
bool gridBladeChannel(uvec4 ctl, uint g, out uint model, out uint layer) {
    uint start = 0u;
    for (int k = 0; k < 4; ++k) {
        uint n = ctl[k] >> 16;
        if (g < start + n) { model = ctl[k] & 0xFFFFu; layer = g - start; return true; }
        start += n;
    }
    model = 0u; layer = 0u;
    return false;
}

// The slot's blades of `model`: the first one's index in the slot and how many (0: none).
uint gridModelBlades(uvec4 ctl, uint model, out uint start) {
    start = 0u;
    for (int k = 0; k < 4; ++k) {   // blades of earlier channels come first in the slot
        uint n = ctl[k] >> 16;
        if (n > 0u && (ctl[k] & 0xFFFFu) == model) return n;
        start += n;
    }
    return 0u;
}

// The reference's hash point of blade g of `cell`: blade g > 0 hashes the cell moved by g * (0.618, 0.414).
vec2 gridBladeHashPoint(vec2 cell, float g) {
    return gridHashCell(cell) + g * vec2(0.6180340, 0.4142136);
}

// The blade's root in world XY: cell + jitter 0.72, times the spacing.
vec2 gridBladeXY(vec2 cell, vec2 p) {
    vec2 jitter = vec2(GrassHash(p), GrassHash(p + vec2(61.7, 23.3)));
    return (cell + jitter * GRID_JITTER) * GRID_SPACING;
}

// The LOD rings' fade of blade g of `cell` at distance d (the same rings.glsl as the instanced
// path, hashed on cell and blade): 0 where they drop it.
float gridRingFade(vec2 cell, float g, float d) {
    return grassRingFade(d, grassInstanceHash(uvec3(ivec3(ivec2(cell), int(g)))));
}
