// The meadow's heightmap (R32F): bilinear filtering done by hand from texelFetch, so every
// stage (terrain, blade generation) and Heightfield.sample on the CPU read the same heights.
uniform sampler2D uHeight;
uniform vec2 uHeightInfo;   // (world units per texel, samples per side)

float heightAt(vec2 xy) {
    float n = uHeightInfo.y;
    vec2 uv = clamp(xy / uHeightInfo.x, vec2(0.0), vec2(n - 1.0));
    ivec2 i0 = min(ivec2(floor(uv)), ivec2(int(n) - 2));
    vec2 f = uv - vec2(i0);
    float h00 = texelFetch(uHeight, i0, 0).r;
    float h10 = texelFetch(uHeight, i0 + ivec2(1, 0), 0).r;
    float h01 = texelFetch(uHeight, i0 + ivec2(0, 1), 0).r;
    float h11 = texelFetch(uHeight, i0 + ivec2(1, 1), 0).r;
    float a = h00 + (h10 - h00) * f.x;
    float b = h01 + (h11 - h01) * f.x;
    return a + (b - a) * f.y;
}

vec3 normalAt(vec2 xy) {
    float e = uHeightInfo.x;
    float dx = heightAt(xy + vec2(e, 0.0)) - heightAt(xy - vec2(e, 0.0));
    float dy = heightAt(xy + vec2(0.0, e)) - heightAt(xy - vec2(0.0, e));
    return normalize(vec3(-dx, -dy, 2.0 * e));
}
