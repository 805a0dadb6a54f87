// Geomorphing (CDLOD-style), shared by the ADT terrain and the procedural meadow terrain.
// A level's grid has twice the step of the level before. Over the last GEOMORPH_FRACTION of a
// level's distance band the vertices that the next coarser grid lacks slide onto the coarser
// grid, so switching to the coarser mesh at the band's end changes nothing on screen, and a fine
// chunk meets a coarser neighbour on exactly the coarser grid's vertices (no T-junction cracks).

#ifndef GEOMORPH_FRACTION
#define GEOMORPH_FRACTION 0.2
#endif

// 0 until the last GEOMORPH_FRACTION of [band_start, band_end], then a linear ramp to 1 at
// band_end (and 1 beyond it).
float morph_factor(float dist, float band_start, float band_end) {
    float morph_start = band_end - GEOMORPH_FRACTION * (band_end - band_start);
    return clamp((dist - morph_start) / max(band_end - morph_start, 1e-6), 0.0, 1.0);
}

// A vertex of the fine grid (grid_pos, a multiple of fine_step, measured from an origin that lies
// on every coarser grid) slid by k toward the coarser (2 * fine_step) grid: vertices on even grid
// lines stay, odd ones move one fine step toward the lower even line, per axis. At k = 1 the
// result is exactly (bit for bit) the even neighbour's grid_pos: the snap to whole steps keeps
// chunks that compute the same vertex from different data in agreement.
vec2 morph_grid(vec2 grid_pos, float fine_step, float k) {
    vec2 idx = floor(grid_pos / fine_step + 0.5);
    vec2 odd = idx - 2.0 * floor(idx * 0.5);
    return (idx - odd * k) * fine_step;
}
