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

// applyLightShadowed for models and WMOs: the light tables' model colours where given (the
// client lights them with ambient and diffuse pulled half-way to each other), else the frame's.
vec3 applyModelLightShadowed(vec3 albedo, vec3 n, float shadow) {
    if (uModelLight[0].w < 0.5) return applyLightShadowed(albedo, n, shadow);
    float diff = max(dot(normalize(n), uSunDir), 0.0) * shadow;
    return albedo * (uModelLight[0].rgb + uModelLight[1].rgb * diff);
}

vec3 applyFog(vec3 color, float dist) {
    float f = clamp((dist - uFog.x) / max(uFog.y - uFog.x, 1e-3), 0.0, 1.0);
    return mix(color, uFogColor, f);
}
