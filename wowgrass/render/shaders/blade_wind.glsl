// The grass lesson's wind for segmented blades, in every pass that draws them (colour,
// wireframe, shadow depth): a quadratic weight (the tip bends most, the root not at all) and a
// phase from time (frame.glsl's uTime) and world position.
uniform vec4 uBladeWind;    // (wind speed, wind strength, horizontal direction it pushes (normalised))

vec3 bladeWind(vec3 world, float height_t) {
    float wind_weight = height_t * height_t;
    float phase = uTime * uBladeWind.x + world.x * 0.7 + world.y * 0.3;
    float wind_offset = sin(phase) * uBladeWind.y * wind_weight;
    return world + vec3(uBladeWind.zw * wind_offset, 0.0);
}
