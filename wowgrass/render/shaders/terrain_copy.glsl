#version 430 core
// Every layer of one texture array level into another's (render/sources/terrain_arenas.py: an
// arena's textures copied on the GPU when the arena grows).

#if defined COMPUTE_SHADER
layout(local_size_x = 8, local_size_y = 8) in;
layout(rgba8, binding = 0) writeonly uniform image2DArray dst;
layout(rgba8, binding = 1) readonly uniform image2DArray src;
void main() {
    ivec3 p = ivec3(gl_GlobalInvocationID);
    if (any(greaterThanEqual(p.xy, imageSize(dst).xy))) return;
    imageStore(dst, p, imageLoad(src, p));
}
#endif
