// The camera-grid grass path's vertex stage (the grass reference's vs_wow_grass, made authoritative):
// grass.glsl with GRASS_GRID defined includes this instead of its instanced vertex stage and keeps
// its fragment stage. One draw per grass model; the slot decisions are grid_slot.glsl's.
// GRID_COMPACT (the default draw, GL 4.3): the instances are the compacted (slot, blade, model)
// entries that grass_grid_cull.glsl kept for this view, read as an instance attribute; every one is
// a blade. Without it (the reference's literal path, `--grid-draw full`): GRID_SIDE^2 * layers
// instances and no instance buffer, gl_InstanceID gives the slot (camera-centred, 2.5 units apart)
// and the layer (the slot's n-th blade of this model), and a slot without one is dropped here.
// The control texture says how many blades of which model grow in the slot's world cell, the
// height atlas where the ground is (wowgrass/grid.py, docs/grid.md).
// With GRID_CAPTURE defined, each instance also writes its blade root and cell for transform
// feedback (tests read the grid back).
// Frame values (matrices, time, wind, camera) come from frame.glsl's block, as for the instanced path.
#include "sway.glsl"
#include "grid_slot.glsl"

#if defined GRID_COMPACT
in uvec2 i_entry;                       // slot | blade << 16, model (grass_grid_cull.glsl)
#else
uniform uint uGridModel;                // the model this draw is for (index in the grid's model table)
#endif

in uvec4 in_mesh;                       // the model's vertex: xyz float bits, uv as half2
out vec4 v_data;                        // uv, ring * 2 + fade, height fraction (grass.glsl's fragment stage)
#if defined GRID_CAPTURE
out vec4 t_root;                        // blade root (world xyz) and 1, or 0s for a dropped slot
out vec4 t_cell;                        // lattice cell (i, j), blade index in the slot, model
out vec4 t_vertex;                      // this vertex in the world (wind included)
#endif

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
    vec2 camXY = uGrassFrame[0].xy;
#if defined GRID_COMPACT
    // the compaction pass made every decision: this entry is a blade
    int slot = int(i_entry.x & 0xFFFFu);
    float g = float(i_entry.x >> 16);
    uint model = i_entry.y;
    vec2 cell = gridSlotCell(slot, camXY);
    ivec2 ownerRC = gridOwnerRC(cell);
    vec2 p = gridBladeHashPoint(cell, g);
    vec2 worldXY = gridBladeXY(cell, p);
    float d = distance(worldXY, camXY);
    float ringFade = gridRingFade(cell, g, d);
#else
    uint model = uGridModel;
    const int SLOTS = GRID_SIDE * GRID_SIDE;
    int layer = gl_InstanceID / SLOTS;
    vec2 cell = gridSlotCell(gl_InstanceID % SLOTS, camXY);
    // the ADT cell holding the anchor owns the lattice cell; its tile's control texel says what grows
    ivec2 ownerRC;
    uvec4 ctl;
    if (!gridSlotControl(cell, camXY, uGrassFrame[0].w, ownerRC, ctl)) { gridDrop(); return; }
    uint start;
    if (uint(layer) >= gridModelBlades(ctl, model, start)) { gridDrop(); return; }
    // the reference's hashes; blade g > 0 of a slot hashes its cell moved by g * (0.618, 0.414)
    float g = float(start + uint(layer));
    vec2 p = gridBladeHashPoint(cell, g);
    vec2 worldXY = gridBladeXY(cell, p);
    float d = distance(worldXY, camXY);
    float ringFade = gridRingFade(cell, g, d);
    if (d >= uGrassFrame[0].w || ringFade <= 0.0) { gridDrop(); return; }
#endif
    // the frame's grass parameters with the reference's grid sway: 0.22 units along (1, 0.35)
    mat4 uGrassParams = grassParams(gridModelInfo(model).xy);
    uGrassParams[1].z = GRID_WIND_AMPLITUDE;
    uGrassParams[2].zw = vec2(GRID_SWAY_X, GRID_SWAY_Y);
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
    t_cell = vec4(cell, g, float(model));
    t_vertex = vec4(world, 1.0);
#endif
}
