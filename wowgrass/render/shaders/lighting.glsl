// Sun, ambient light and distance fog shared by terrain, grass and doodads (uSunDir: towards the
// sun, normalised; uFog: fog start and end in world units from the camera). Needs frame.glsl,
// which programs include at the top, outside their stage sections (an include is resolved once
// per file, so one inside the vertex section would be missing from the fragment section).

vec3 applyLight(vec3 albedo, vec3 n) {
    float diff = max(dot(normalize(n), uSunDir), 0.0);
    return albedo * (uAmbient + uSunColor * diff);
}

// applyLight with the sun's light scaled by shadow (1: lit, 0: in the sun's shadow).
vec3 applyLightShadowed(vec3 albedo, vec3 n, float shadow) {
    float diff = max(dot(normalize(n), uSunDir), 0.0) * shadow;
    return albedo * (uAmbient + uSunColor * diff);
}

vec3 applyFog(vec3 color, float dist) {
    float f = clamp((dist - uFog.x) / max(uFog.y - uFog.x, 1e-3), 0.0, 1.0);
    return mix(color, uFogColor, f);
}
