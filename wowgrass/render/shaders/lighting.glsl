// Sun, ambient light and distance fog shared by terrain, grass and doodads.
uniform vec3 uSunDir;       // towards the sun, normalised
uniform vec3 uSunColor;
uniform vec3 uAmbient;
uniform vec3 uFogColor;
uniform vec2 uFog;          // fog start, fog end (world units from the camera)

vec3 applyLight(vec3 albedo, vec3 n) {
    float diff = max(dot(normalize(n), uSunDir), 0.0);
    return albedo * (uAmbient + uSunColor * diff);
}

vec3 applyFog(vec3 color, float dist) {
    float f = clamp((dist - uFog.x) / max(uFog.y - uFog.x, 1e-3), 0.0, 1.0);
    return mix(color, uFogColor, f);
}
