// Wind sway of ground-effect grass: the grass reference's instanced vertex shader (r_shader.c) math
// (WOW_GRASS_WIND 0, the default), and its "future tuning" options. Shared by both grass paths
// (instanced and camera grid) and every pass that draws grass.
//
// uGrassParams columns (GLSL mat4 columns, uploaded per model draw):
//   [0] = vec4(camera_xy, fade_start, fade_end)
//   [1] = vec4(time, wind_speed, wind_amplitude, root_fraction)
//   [2] = vec4(phase_xy, sway_direction_xy)
//   [3] = vec4(model_z_min, model_z_max, enabled, reserved)

// Wind options (compile-time: program variants, `view --wind`, `--wind-falloff`):
//   WOW_GRASS_WIND          0 classic: one sine along the sway direction (the reference's shaders)
//                           1 two-axis: independent X and Y sines at 1.3 and 0.9 rad/s, amplitudes
//                             in the ratio 0.22 : 0.08 (the reference's "future tuning")
//                           2 gust: classic plus a raised-cosine gust band travelling along
//                             WOW_GRASS_GUST_DIR at WOW_GRASS_GUST_SPEED, its front bent by a sine
//   WOW_GRASS_WIND_FALLOFF  0 smoothstep from the root fraction to the tip (the instanced reference)
//                           1 quadratic: weight = height fraction squared
#ifndef WOW_GRASS_WIND
#define WOW_GRASS_WIND 0
#endif
#ifndef WOW_GRASS_WIND_FALLOFF
#define WOW_GRASS_WIND_FALLOFF 0
#endif

// Normalised height of a model-space z between the model's z min and max: 0 at the bottom, 1 at the top.
float grassHeightFraction(float z, mat4 p) {
    float grassHeight = max(p[3].y - p[3].x, 0.001);
    return clamp((z - p[3].x) / grassHeight, 0.0, 1.0);
}

// How much of the wind a vertex at height fraction h takes: 0 at the root, 1 at the tip.
float grassFalloff(float h, float rootFraction) {
#if WOW_GRASS_WIND_FALLOFF == 1
    return h * h;
#else
    return smoothstep(rootFraction, 1.0, h);
#endif
}

float grassTopWeight(vec3 position, mat4 p) {
    return grassFalloff(grassHeightFraction(position.z, p), p[1].w);
}

// The gust band's strength (0..1) at world XY and time t: a raised cosine WOW_GRASS_GUST_WIDTH
// wide (half width) every WOW_GRASS_GUST_SPACING units along the wind, moving with it; the front
// is displaced by a sine across the wind so it does not march in a straight line.
float grassGust(vec2 xy, float t) {
    vec2 d = normalize(vec2(WOW_GRASS_GUST_DIR_X, WOW_GRASS_GUST_DIR_Y));
    float across = dot(xy, vec2(-d.y, d.x));
    float s = dot(xy, d) - WOW_GRASS_GUST_SPEED * t
              + WOW_GRASS_GUST_BEND * sin(across * WOW_GRASS_GUST_BEND_FREQ + 0.31 * t);
    float x = s - WOW_GRASS_GUST_SPACING * floor(s / WOW_GRASS_GUST_SPACING + 0.5);
    float w = WOW_GRASS_GUST_WIDTH;
    return abs(x) < w ? 0.5 + 0.5 * cos(3.14159265 * x / w) : 0.0;
}

// The wind displacement shared by both grass paths, in the space of swayDir and windDir:
// top = grassFalloff weight, phase in radians, amp the classic peak, speed the classic rad/s,
// xy the blade's world position (gust band), windDir the gust's push direction.
vec2 grassWind(float top, float phase, float t, float speed, float amp, vec2 swayDir, vec2 xy, vec2 windDir) {
#if WOW_GRASS_WIND == 1
    return vec2(sin(t * 1.3 + phase) * amp, cos(t * 0.9 + phase) * (amp * (0.08 / 0.22))) * top;
#else
    float sway = sin(t * speed + phase) * amp * top;
    vec2 offset = swayDir * sway;
#if WOW_GRASS_WIND == 2
    offset += windDir * (grassGust(xy, t) * amp * WOW_GRASS_GUST_STRENGTH * top);
#endif
    return offset;
#endif
}

// The wind's model-space XY displacement of a vertex at height fraction heightFraction (grassSway's
// body; passes that already have the fraction call this and compute it once). windDir: the
// world wind direction turned into model space (the instance's yaw undone).
vec2 grassSwayOffset(float heightFraction, vec2 instanceXY, mat4 p, vec2 windDir) {
    float grassHeight = max(p[3].y - p[3].x, 0.001);
    float grassTop    = grassFalloff(heightFraction, p[1].w);
    float grassPhase  = dot(instanceXY, p[2].xy);
    // uniforms only, one product: amplitude * height * enabled ([3].z; 0 freezes the grass)
    float grassScale  = p[1].z * grassHeight * p[3].z;
    return grassWind(grassTop, grassPhase, p[1].x, p[1].y, grassScale, p[2].zw, instanceXY, windDir);
}

// The same for an instance without yaw (model space = world space).
vec2 grassSwayOffset(float heightFraction, vec2 instanceXY, mat4 p) {
    return grassSwayOffset(heightFraction, instanceXY, p, normalize(vec2(WOW_GRASS_GUST_DIR_X, WOW_GRASS_GUST_DIR_Y)));
}

// The world wind direction in the model space of an instance turned by (cos yaw, sin yaw).
vec2 grassWindInModel(vec2 yawCS) {
    vec2 d = normalize(vec2(WOW_GRASS_GUST_DIR_X, WOW_GRASS_GUST_DIR_Y));
    return vec2(yawCS.x * d.x + yawCS.y * d.y, -yawCS.y * d.x + yawCS.x * d.y);
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
