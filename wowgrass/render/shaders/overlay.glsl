#version 330 core
// A text overlay drawn after the viewport is reset to the whole frame: one textured rectangle
// (RGBA, alpha-blended) placed in normalised device coordinates.

#if defined VERTEX_SHADER
uniform vec4 uRect;   // x0, y0, x1, y1 in NDC
out vec2 v_uv;
void main() {
    vec2 corner = vec2(gl_VertexID & 1, gl_VertexID >> 1);
    v_uv = corner;
    gl_Position = vec4(mix(uRect.xy, uRect.zw, corner), 0.0, 1.0);
}
#elif defined FRAGMENT_SHADER
uniform sampler2D uTexture;
in vec2 v_uv;
out vec4 f_color;
void main() {
    f_color = texture(uTexture, v_uv);
}
#endif
