#version 430 core
// A 2D texture's level into one slice of an array's level (render/sources/terrain_arenas.py: a
// tile's alpha atlas or a layer, mipmapped once, written into the arena's texture array).

#if defined COMPUTE_SHADER
layout(local_size_x = 8, local_size_y = 8) in;
layout(rgba8, binding = 0) writeonly uniform image2DArray dst;
layout(rgba8, binding = 1) readonly uniform image2D src;
uniform int slice_;
void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    if (any(greaterThanEqual(p, imageSize(src)))) return;
    imageStore(dst, ivec3(p, slice_), imageLoad(src, p));
}
#endif
