// The frame's uniform block, shared by every program (one std140 buffer slot per view; see
// wowgrass/render/frame.py, which packs it). Members are used without a block prefix.
#if defined FRAME_SLOTS
// A compute pass serving every view in one dispatch reads the same buffer as storage: slot v is
// FRAME_STRIDE vec4s from v * FRAME_STRIDE (the block's std140 offsets below, in vec4s), and
// loadFrameSlot(v) fills the members culling uses, under the block's names: the camera, near/far,
// uGrassFrame's column 0 only (camera xy, fade start, draw distance), the frustum and the rings.
layout(std430, binding = FRAME_SLOTS) readonly buffer FrameSlots { vec4 frameSlots[]; };
vec3 uCameraPos;
vec2 uNearFar;
mat4 uGrassFrame;
vec4 uFrustum[6];
vec4 uRings;
vec4 uRingKeep;

void loadFrameSlot(uint view) {
    uint b = view * uint(FRAME_STRIDE);
    uCameraPos = frameSlots[b + 4u].xyz;
    uNearFar = frameSlots[b + 9u].zw;
    uGrassFrame = mat4(frameSlots[b + 10u], vec4(0.0), vec4(0.0), vec4(0.0));
    for (uint i = 0u; i < 6u; ++i) uFrustum[i] = frameSlots[b + 14u + i];
    uRings = frameSlots[b + 20u];
    uRingKeep = frameSlots[b + 21u];
}
#else
layout(std140) uniform Frame {
    mat4 uViewProj;
    vec3 uCameraPos;  float uTime;
    vec3 uSunDir;     float uFrameReserved0;
    vec3 uSunColor;   float uFrameReserved1;
    vec3 uAmbient;    float uFrameReserved2;
    vec3 uFogColor;   float uFrameReserved3;
    vec2 uFog;        vec2 uNearFar;          // fog start/end (world units), camera near/far
    // grass: columns 0-2 of sway.glsl's parameter matrix (camera xy, fade start, draw distance |
    // time, wind speed, amplitude, root fraction | phase xy, sway direction xy); column 3 = (sway on, 0, 0, 0)
    mat4 uGrassFrame;
    vec4 uFrustum[6];                         // inside where dot(xyz, p) + w >= 0
    vec4 uRings;                              // LOD ring radii 1..3 (world units), cross-fade band
    vec4 uRingKeep;                           // keep fraction of rings 1..3, debug colouring on (w)
    mat4 uShadowMatrix;                       // world -> the sun's shadow map [0, 1]^3 (shadow.glsl)
    vec4 uShadowParams;                       // shadows on, one map texel, depth bias, reach (world units)
    vec4 uWaterLight[4];                      // the light tables' river shallow, river deep, ocean shallow,
                                              // ocean deep (rgb 0..1); [0].w 1 when they are given
    vec4 uModelLight[2];                      // the light tables' model and WMO ambient, diffuse (rgb 0..1,
                                              // the client's DNUpdateColors); [0].w 1 when they are given
};
#endif


// sway.glsl's parameter matrix for a model whose mesh spans z in [zRange.x, zRange.y]
mat4 grassParams(vec2 zRange) {
    return mat4(uGrassFrame[0], uGrassFrame[1], uGrassFrame[2], vec4(zRange, uGrassFrame[3].x, 0.0));
}
