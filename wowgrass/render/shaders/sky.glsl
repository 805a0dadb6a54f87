#version 330 core
// The sky from the light tables (render/sources/sky.py): a dome behind everything, its colour by
// the view ray's elevation between the sky bands, top to horizon and below, at the angles
// purpleKarrot/wowmapview mapview/sky.cpp draws them (90, 30, 15, 5, 0, -30, -90 degrees:
// sky_top, sky_middle, sky_band1, sky_band2, sky_smog, fog, fog).

#include "frame.glsl"

#if defined VERTEX_SHADER
out vec2 v_ndc;
void main() {
    vec2 p = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2)) * 2.0 - 1.0;  // one big triangle
    v_ndc = p;
    gl_Position = vec4(p, 1.0, 1.0);
}

#elif defined FRAGMENT_SHADER
uniform mat4 uInvViewProj;
uniform vec3 uSky[6];             // sky_top, sky_middle, sky_band1, sky_band2, sky_smog, fog (0..1)
in vec2 v_ndc;
out vec4 f_color;

const float ANGLES[7] = float[7](90.0, 30.0, 15.0, 5.0, 0.0, -30.0, -90.0);

void main() {
    vec4 far = uInvViewProj * vec4(v_ndc, 1.0, 1.0);
    vec3 dir = normalize(far.xyz / far.w - uCameraPos);
    float elev = degrees(asin(clamp(dir.z, -1.0, 1.0)));
    vec3 c = uSky[5];
    for (int i = 0; i < 6; ++i) {
        float hi = ANGLES[i], lo = ANGLES[i + 1];
        if (elev <= hi && elev >= lo) {
            vec3 a = uSky[i], b = uSky[min(i + 1, 5)];
            c = mix(b, a, (elev - lo) / max(hi - lo, 1e-3));
            break;
        }
    }
    f_color = vec4(c, 1.0);
}
#endif
