#version 330 core
// The horizon: the map's WDL (17x17 chunk corners + 16x16 chunk centres a tile, each chunk four
// triangles around its centre, MAHO holes left out), drawn where no ADT terrain is resident, lit
// by the sun and under the same fog as the rest (render/sources/horizon.py). A tile whose ADT
// terrain is resident (uHorizonMask, 64x64, [row][col]) is moved outside the clip volume: all
// three vertices of each of its triangles are, so the GPU drops them.

#include "frame.glsl"

#if defined VERTEX_SHADER
in vec3 in_position;
in vec4 in_normal;   // xyz
in float in_tile;    // row * 64 + col

uniform sampler2D uHorizonMask;

out vec3 v_normal;
out float v_dist;

void main() {
    int t = int(in_tile + 0.5);
    if (texelFetch(uHorizonMask, ivec2(t % 64, t / 64), 0).r > 0.5) {
        gl_Position = vec4(2.0, 2.0, 2.0, 1.0);  // outside: the triangle is clipped away
        v_normal = vec3(0.0, 0.0, 1.0);
        v_dist = 0.0;
        return;
    }
    v_normal = in_normal.xyz;
    v_dist = distance(in_position, uCameraPos);
    gl_Position = uViewProj * vec4(in_position, 1.0);
}

#elif defined FRAGMENT_SHADER && defined SHADOW_PASS
void main() {}

#elif defined FRAGMENT_SHADER && defined WIREFRAME
out vec4 f_color;
void main() { f_color = vec4(0.38, 0.42, 0.5, 1.0); }

#elif defined FRAGMENT_SHADER
#include "lighting.glsl"

uniform vec3 uHorizonColour;  // the far tiles' mean colour (0..1)

in vec3 v_normal;
in float v_dist;
out vec4 f_color;

void main() {
    f_color = vec4(applyFog(applyLight(uHorizonColour, v_normal), v_dist), 1.0);
}
#endif
