#version 330 core
// The procedural meadow's ground: square tiles drawn from a few plane meshes (one instanced
// draw per LOD mesh, tile corners per instance), heights sampled from the R32F heightmap in the
// vertex stage, geomorphed toward the coarser LOD over the last 20% of each distance band.
// Variants: WIREFRAME (line index buffer, flat colour), SHADOW_PASS (the sun's shadow map).
// uViewProj is the camera's or the sun's; uCameraPos stays the camera's in every pass (LOD
// distances, so the shadow caster is the mesh the camera sees).

#include "frame.glsl"
#include "heightfield.glsl"
#if defined VERTEX_SHADER
#include "geomorph.glsl"

uniform vec4 uLod;            // (grid step of this mesh, band start, band end, LOD index)

in vec2 in_grid;              // vertex position within the tile (world units from its corner)
in vec2 i_tile;               // the tile's corner (world XY), per instance

out vec3 v_world;
out float v_dist;

void main() {
    float k = morph_factor(distance(i_tile + in_grid, uCameraPos.xy), uLod.y, uLod.z);
    vec2 xy = i_tile + morph_grid(in_grid, uLod.x, k);
    v_world = vec3(xy, heightAt(xy));
    v_dist = distance(v_world, uCameraPos);
    gl_Position = uViewProj * vec4(v_world, 1.0);
}

#elif defined FRAGMENT_SHADER
in vec3 v_world;
in float v_dist;
out vec4 f_color;
uniform vec4 uLod;
uniform int uLodColours;      // 1: tint each LOD level (debug)

#if defined SHADOW_PASS
void main() { f_color = vec4(1.0); }
#elif defined WIREFRAME
void main() {
    vec3 c = vec3(0.36, 0.42, 0.30);
    if (uLodColours == 1) c = vec3[4](vec3(0.9, 0.3, 0.2), vec3(0.9, 0.8, 0.2), vec3(0.2, 0.8, 0.4),
                                      vec3(0.3, 0.5, 0.95))[int(uLod.w) & 3];
    f_color = vec4(c, 1.0);
}
#else
#include "lighting.glsl"
#include "shadow.glsl"

void main() {
    vec3 n = normalAt(v_world.xy);   // per pixel: shading does not change with the mesh's LOD
    // meadow green on gentle ground, earth then rock on steep slopes, a little variation by height
    float slope = 1.0 - n.z;
    vec3 grass = mix(vec3(0.22, 0.34, 0.10), vec3(0.30, 0.38, 0.14), clamp(v_world.z * 0.02 + 0.5, 0.0, 1.0));
    vec3 albedo = mix(grass, vec3(0.36, 0.31, 0.24), smoothstep(0.12, 0.3, slope));
    albedo = mix(albedo, vec3(0.42, 0.41, 0.39), smoothstep(0.3, 0.5, slope));
    if (uLodColours == 1) albedo *= vec3[4](vec3(1.6, 0.6, 0.5), vec3(1.6, 1.4, 0.4), vec3(0.6, 1.5, 0.8),
                                            vec3(0.6, 0.9, 1.9))[int(uLod.w) & 3];
    float sun = max(dot(n, uSunDir), 0.0) * shadowFactor(v_world, v_dist);
    vec3 color = albedo * (uAmbient + uSunColor * sun);
    f_color = vec4(applyFog(color, v_dist), 1.0);
}
#endif
#endif
