// Wind sway of ground-effect grass: the grass reference's instanced vertex shader (r_shader.c), verbatim math.
// Shared by every pass that draws grass (colour now; a wind-matched shadow pass later).
//
// uGrassParams columns (GLSL mat4 columns, uploaded per model draw):
//   [0] = vec4(camera_xy, fade_start, fade_end)
//   [1] = vec4(time, wind_speed, wind_amplitude, root_fraction)
//   [2] = vec4(phase_xy, sway_direction_xy)
//   [3] = vec4(model_z_min, model_z_max, enabled, reserved)

// Normalised height of a model-space z between the model's z min and max: 0 at the bottom, 1 at the top.
float grassHeightFraction(float z, mat4 p) {
    float grassHeight = max(p[3].y - p[3].x, 0.001);
    return clamp((z - p[3].x) / grassHeight, 0.0, 1.0);
}

// 0 at and below the root fraction of the model's height, rising smoothly to 1 at the top.
float grassTopWeight(vec3 position, mat4 p) {
    return smoothstep(p[1].w, 1.0, grassHeightFraction(position.z, p));
}

// The wind's model-space XY displacement of a vertex at height fraction heightFraction (grassSway's
// body; passes that already have the fraction call this and compute it once).
vec2 grassSwayOffset(float heightFraction, vec2 instanceXY, mat4 p) {
    float grassHeight = max(p[3].y - p[3].x, 0.001);
    float grassTop    = smoothstep(p[1].w, 1.0, heightFraction);
    float grassPhase  = dot(instanceXY, p[2].xy);
    // uniforms only, one product: amplitude * height * enabled ([3].z; 0 freezes the grass)
    float grassScale  = p[1].z * grassHeight * p[3].z;
    float grassSwayAmount = sin(p[1].x * p[1].y + grassPhase) * grassScale * grassTop;
    return p[2].zw * grassSwayAmount;
}

// Model-space position displaced by the wind; instanceXY is the instance's world XY translation.
vec3 grassSway(vec3 position, vec2 instanceXY, mat4 p) {
    position.xy += grassSwayOffset(grassHeightFraction(position.z, p), instanceXY, p);
    return position;
}

// 1 inside fade_start, 0 at fade_end (the draw distance) and beyond; d = distance in XY to the camera.
float grassFadeAt(float d, mat4 p) {
    return 1.0 - smoothstep(p[0].z, p[0].w, d);
}

float grassFade(vec2 instanceXY, mat4 p) {
    return grassFadeAt(distance(instanceXY, p[0].xy), p);
}

bool grassBeyondDrawDistance(vec2 instanceXY, mat4 p) {
    return distance(instanceXY, p[0].xy) >= p[0].w;
}

// uGrassParams built from the compile-time constants table (the WOW_GRASS_* defines injected by
// wowgrass.render.programs): what passes without their own settings (a shadow pass) start from.
mat4 grassDefaultParams(vec2 cameraXY, float time, float zMin, float zMax, vec2 swayDir) {
    return mat4(
        vec4(cameraXY, WOW_GRASS_FADE_START_DISTANCE, WOW_GRASS_DRAW_DISTANCE),
        vec4(time, WOW_GRASS_WIND_SPEED, WOW_GRASS_WIND_AMPLITUDE, WOW_GRASS_WIND_ROOT_FRACTION),
        vec4(WOW_GRASS_WIND_PHASE_X, WOW_GRASS_WIND_PHASE_Y, swayDir),
        vec4(zMin, zMax, 1.0, 0.0));
}
