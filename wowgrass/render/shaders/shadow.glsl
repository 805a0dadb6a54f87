// Sun shadows in the colour passes: one depth map from the directional sun, fitted to the near
// part of the view (wowgrass.render.shadow), sampled with 3x3 hardware-compared taps (each a 2x2
// bilinear comparison): percentage-closer filtering. Beyond the map's reach it fades to lit.
// uShadowMatrix and uShadowParams come from frame.glsl's block; the map is on texture unit 7.
uniform sampler2DShadow uShadowMap;

float shadowFactor(vec3 world, float dist) {
    if (uShadowParams.x < 0.5) return 1.0;
    vec4 p = uShadowMatrix * vec4(world, 1.0);
    vec3 c = p.xyz / p.w;
    if (any(lessThan(c.xy, vec2(0.0))) || any(greaterThan(c.xy, vec2(1.0))) || c.z >= 1.0) return 1.0;
    float sum = 0.0;
    for (int y = -1; y <= 1; ++y)
        for (int x = -1; x <= 1; ++x)
            sum += texture(uShadowMap, vec3(c.xy + vec2(x, y) * uShadowParams.y, c.z - uShadowParams.z));
    return mix(sum / 9.0, 1.0, smoothstep(0.85 * uShadowParams.w, uShadowParams.w, dist));
}
