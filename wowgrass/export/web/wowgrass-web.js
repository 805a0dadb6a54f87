// The page of `wowgrass export web`: the tiles' glTF (what `export gltf` writes) drawn with three.js,
// lit and fogged as `wowgrass view` lights its frames, the grass swaying with the view's sway
// (wowgrass/render/shaders/sway.glsl, rings.glsl, grass.glsl: ported into three's shaders below).
// Coordinates: WoW world (X north, Y west, Z up) for the camera and scene.json; glTF/three space is
// (x, z, -y) relative to scene.json's origin.
import * as THREE from 'three';
import { GLTFLoader } from 'three/addons/loaders/GLTFLoader.js';

const W = window.wowgrass;
const statusEl = document.getElementById('status');
const hash = new URLSearchParams(location.hash.slice(1));
const nums = (s) => s.split(',').map(Number);

const scene = await (await fetch('./scene.json')).json();
W.timings = { scene_json: performance.now() };
const origin = scene.origin;   // WoW (X, Y, Z) of three's origin
const toThree = (x, y, z) => new THREE.Vector3(x - origin[0], z - origin[2], -(y - origin[1]));
const dirToThree = (d) => new THREE.Vector3(d[0], d[2], -d[1]);

const renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
renderer.outputColorSpace = THREE.LinearSRGBColorSpace;   // the view's colours: no sRGB round trip
renderer.setPixelRatio(hash.has('ratio') ? Number(hash.get('ratio')) : window.devicePixelRatio);
renderer.setSize(innerWidth, innerHeight);
document.body.prepend(renderer.domElement);
const three = new THREE.Scene();
const camera = new THREE.PerspectiveCamera(60, innerWidth / innerHeight, 0.2, 1500);

// --- light: the zone's table (a half-hour step) or the view's fixed sun -----------------------------
const U = {
  uSunDir: { value: new THREE.Vector3(0, 1, 0) }, uSunColor: { value: new THREE.Color() },
  uAmbient: { value: new THREE.Color() }, uFogColor: { value: new THREE.Color() },
  uFog: { value: new THREE.Vector2(260, 900) }, uTime: { value: 0 }, uCamXY: { value: new THREE.Vector2() },
  uOriginXY: { value: new THREE.Vector2(origin[0], origin[1]) },
};
const G = scene.grass;
const TERRAIN_REACH = 3200;   // the view's far tiles (render/constants.py): the fog never opens past them
let baseFog = [260, 900];
const lights = scene.light.table;
let hour = hash.has('clock') ? clockHalfHours(hash.get('clock')) : scene.light.start;
function clockHalfHours(t) { const [h, m] = t.split(':').map(Number); return (h * 60 + m) / 30; }
function mixLight(k) {
  const n = lights.length, i = Math.floor(k) % n, j = (i + 1) % n, f = n > 1 ? k - Math.floor(k) : 0;
  const m = (key, c) => lights[i][key].map((v, q) => v + (lights[j][key][q] - v) * f);
  return { sun_dir: m('sun_dir'), sun_color: m('sun_color'), ambient: m('ambient'), fog_color: m('fog_color'),
           fog: m('fog'), sky: m('sky') };
}
function setHour(k) {
  hour = ((k % 48) + 48) % 48;
  const l = mixLight(lights.length > 1 ? hour * lights.length / 48 : 0);
  U.uSunDir.value.copy(dirToThree(l.sun_dir)).normalize();
  U.uSunColor.value.setRGB(...l.sun_color);
  U.uAmbient.value.setRGB(...l.ambient);
  U.uFogColor.value.setRGB(...l.fog_color);
  baseFog = [l.fog[0], l.fog[1]];
  for (let i = 0; i < 6; i++) skyColours[i].setRGB(l.sky[3 * i], l.sky[3 * i + 1], l.sky[3 * i + 2]);
  const mins = Math.round(hour * 30) % 1440;
  document.getElementById('clocktext').textContent =
    `${String(Math.floor(mins / 60)).padStart(2, '0')}:${String(mins % 60).padStart(2, '0')}` +
    (scene.light.source === 'tables' ? '' : ' (no light tables: the view\'s fixed sun)');
  document.getElementById('hour').value = hour;
}
// the view's sky (sky.glsl): six colour bands by the view direction's elevation
const skyColours = Array.from({ length: 6 }, () => new THREE.Color());
const sky = new THREE.Mesh(new THREE.SphereGeometry(1, 32, 16), new THREE.ShaderMaterial({
  uniforms: { uSky: { value: skyColours } }, side: THREE.BackSide, depthWrite: false, depthTest: false,
  vertexShader: `varying vec3 vDir;
    void main() { vDir = position; gl_Position = projectionMatrix * modelViewMatrix * vec4(position, 1.0); gl_Position.z = gl_Position.w; }`,
  fragmentShader: `uniform vec3 uSky[6]; varying vec3 vDir;
    void main() {
      float elev = degrees(asin(clamp(normalize(vDir).y, -1.0, 1.0)));
      float ANGLES[7] = float[7](90.0, 30.0, 15.0, 5.0, 0.0, -30.0, -90.0);
      vec3 c = uSky[5];
      for (int i = 0; i < 6; ++i) {
        float hi = ANGLES[i], lo = ANGLES[i + 1];
        if (elev <= hi && elev >= lo) { c = mix(uSky[min(i + 1, 5)], uSky[i], (elev - lo) / max(hi - lo, 1e-3)); break; }
      }
      gl_FragColor = vec4(c, 1.0);
    }`,
}));
sky.renderOrder = -1;
sky.frustumCulled = false;
three.add(sky);
document.getElementById('hour').addEventListener('input', (e) => setHour(Number(e.target.value)));
if (lights.length < 2) document.getElementById('hour').disabled = true;
setHour(hour);

// --- materials: three's unlit material with the view's light, fog and (grass) sway injected ---------
const COMMON_VS = `
varying vec3 vWgWorld;
varying vec3 vWgNormal;
uniform vec2 uCamXY;
uniform vec2 uOriginXY;
uniform float uTime;
`;
const GRASS_VS = `
uniform vec4 uGrassZ;          // model z min, z max (three's y), 0, 0
varying vec4 vWgGrass;         // fade, height fraction, ring hash, distance
float grassInstanceHash(uvec3 p) {
    uint h = (p.x * 0x8da6b343u) ^ (p.y * 0xd8163841u) ^ (p.z * 0xcb1ab31fu);
    h ^= h >> 16; h *= 0x7feb352du;
    h ^= h >> 15; h *= 0x846ca68bu;
    h ^= h >> 16;
    return float(h >> 8) * (1.0 / 16777216.0);
}
float grassRingFade(float d, float h) {   // rings.glsl: the LOD rings thin the grass with distance
    const vec3 radii = vec3(${G.ring_radii.map(v => Math.min(v, 1e30).toExponential(6)).join(', ')});
    const vec3 keep = vec3(${G.ring_keep.map(v => v.toFixed(6)).join(', ')});
    float band = max(${G.ring_band.toFixed(3)}, 1e-3), f = 1.0;
    if (h >= keep.x) f = min(f, clamp((radii.x - d) / band, 0.0, 1.0));
    if (h >= keep.y) f = min(f, clamp((radii.y - d) / band, 0.0, 1.0));
    if (h >= keep.z) f = min(f, clamp((radii.z - d) / band, 0.0, 1.0));
    return f;
}
`;
// sway.glsl's classic wind with the smoothstep falloff, in the model's own space (three's x, -z)
const GRASS_SWAY = `
mat4 wgInst = modelMatrix;
#ifdef USE_INSTANCING
wgInst = modelMatrix * instanceMatrix;
#endif
vec3 wgPos = wgInst[3].xyz;
vec2 wgXY = vec2(wgPos.x, -wgPos.z) + uOriginXY;          // the instance's WoW world XY
float wgH = clamp((transformed.y - uGrassZ.x) / max(uGrassZ.y - uGrassZ.x, 0.001), 0.0, 1.0);
float wgTop = smoothstep(${G.root_fraction.toFixed(6)}, 1.0, wgH);
float wgPhase = dot(wgXY, vec2(${G.phase[0].toFixed(6)}, ${G.phase[1].toFixed(6)}));
float wgSway = sin(uTime * ${G.wind_speed.toFixed(6)} + wgPhase) * ${G.wind_amplitude.toFixed(6)}
               * max(uGrassZ.y - uGrassZ.x, 0.001) * wgTop;
transformed.x += ${G.sway_direction[0].toFixed(6)} * wgSway;
transformed.z -= ${G.sway_direction[1].toFixed(6)} * wgSway;
float wgD = distance(wgXY, uCamXY);
float wgFade = clamp((${G.draw_distance.toFixed(3)} - wgD) / ${(G.draw_distance - G.fade_start).toFixed(3)}, 0.0, 1.0)
              * grassRingFade(wgD, grassInstanceHash(floatBitsToUint(vec3(wgXY, wgPos.y + ${origin[2].toFixed(3)}))));
vWgGrass = vec4(wgFade, wgH, 0.0, wgD);
`;
const WORLD_VS = `
vec4 wgLocal = vec4(transformed, 1.0);
vec3 wgN = normal;
#ifdef USE_INSTANCING
wgLocal = instanceMatrix * wgLocal;
wgN = mat3(instanceMatrix) * wgN;
#endif
vWgWorld = (modelMatrix * wgLocal).xyz;
vWgNormal = mat3(modelMatrix) * wgN;
`;
const COMMON_FS = `
varying vec3 vWgWorld;
varying vec3 vWgNormal;
uniform vec3 uSunDir;
uniform vec3 uSunColor;
uniform vec3 uAmbient;
uniform vec3 uFogColor;
uniform vec2 uFog;
vec3 wgFog(vec3 c) {
    float f = clamp((distance(vWgWorld, cameraPosition) - uFog.x) / max(uFog.y - uFog.x, 1e-3), 0.0, 1.0);
    return mix(c, uFogColor, f);
}
`;
const GRASS_FS = `
varying vec4 vWgGrass;
float bayer4(vec2 p) {
    uvec2 q = uvec2(p) & 3u;
    uint a = q.x ^ q.y;
    uint m = ((a & 1u) << 3) | ((q.y & 1u) << 2) | (a & 2u) | ((q.y & 2u) >> 1);
    return (float(m) + 0.5) / 16.0;
}
`;

function patchMaterial(src, kind, geometry) {
  const m = new THREE.MeshBasicMaterial({
    map: src.map, color: src.color, transparent: src.transparent, opacity: src.opacity, side: src.side,
    alphaTest: src.alphaTest, vertexColors: src.vertexColors, depthWrite: src.depthWrite, name: src.name,
  });
  if (m.map) { m.map.colorSpace = THREE.NoColorSpace; m.map.needsUpdate = true; }
  const grass = kind === 'grass';
  if (grass && m.map && m.alphaTest > 0) {   // averaged alpha in the mips would fall under the cutoff: far grass gone
    m.map = m.map.clone();
    m.map.minFilter = THREE.LinearFilter;
    m.map.generateMipmaps = false;
    m.map.needsUpdate = true;
  }
  const uniforms = { ...U };
  if (grass) {
    geometry.computeBoundingBox();
    const b = geometry.boundingBox;
    uniforms.uGrassZ = { value: new THREE.Vector4(b.min.y, b.max.y, 0, 0) };
  }
  m.onBeforeCompile = (shader) => {
    Object.assign(shader.uniforms, uniforms);
    let vs = COMMON_VS + (grass ? GRASS_VS : '') + shader.vertexShader;
    if (grass) vs = vs.replace('#include <begin_vertex>', '#include <begin_vertex>\n' + GRASS_SWAY);
    vs = vs.replace('#include <project_vertex>', '#include <project_vertex>\n' + WORLD_VS +
      // as the view: an instance beyond the draw distance or dropped by its ring is not rasterised
      (grass ? 'if (wgFade <= 0.0) gl_Position = vec4(2.0, 2.0, 2.0, 1.0);\n' : ''));
    let fs = COMMON_FS + (grass ? GRASS_FS : '') + shader.fragmentShader;
    if (grass) {   // grass.glsl: the fade dithered out, the rings' dissolve, then the alpha test
      fs = fs.replace('#include <alphatest_fragment>', `
        float wgFade = vWgGrass.x;
        if (wgFade <= 0.0 || (wgFade < 1.0 && wgFade <= bayer4(gl_FragCoord.xy))) discard;
        #include <alphatest_fragment>`);
      fs = fs.replace('#include <opaque_fragment>', `
        outgoingLight = wgFog(diffuseColor.rgb * (uAmbient + uSunColor * max(uSunDir.y, 0.0))
                              * mix(0.7, 1.08, vWgGrass.y));
        #include <opaque_fragment>`);
    } else {
      fs = fs.replace('#include <opaque_fragment>', `
        outgoingLight = wgFog(diffuseColor.rgb * (uAmbient + uSunColor
                              * max(dot(normalize(vWgNormal), uSunDir), 0.0)));
        #include <opaque_fragment>`);
    }
    shader.vertexShader = vs;
    shader.fragmentShader = fs;
  };
  m.customProgramCacheKey = () => 'wowgrass-' + kind;
  return m;
}

// --- tiles ---------------------------------------------------------------------------------------------
const groups = { grass: [], doodads: [], terrain: [], wmos: [], water: [] };
function kindOf(obj) {   // export gltf's node tree: tile / terrain | doodads | water | wmos | grass
  for (let o = obj; o; o = o.parent) {
    const n = o.name || '';
    if (n === 'terrain' || n === 'doodads' || n === 'water' || n === 'wmos' || n === 'grass') return n;
  }
  return 'doodads';
}
const loader = new GLTFLoader();
let grassInstances = 0;
async function loadTile(t) {
  const gltf = await loader.loadAsync('./' + t.file);
  const root = gltf.scene;
  let wo = null;
  root.traverse((o) => { if (!wo && o.userData && o.userData.wow_origin) wo = o.userData.wow_origin; });
  if (wo) root.position.copy(toThree(wo[0], wo[1], wo[2] || 0));
  const cache = new Map();
  root.traverse((o) => {
    if (!o.isMesh) return;
    const kind = kindOf(o);
    const key = o.material.uuid + kind + (kind === 'grass' ? o.geometry.uuid : '');
    if (!cache.has(key)) cache.set(key, patchMaterial(o.material, kind, o.geometry));
    o.material = cache.get(key);
    o.frustumCulled = !o.isInstancedMesh;   // an instanced mesh's bounds are its first instance's
    if (o.isInstancedMesh && kind === 'grass') grassInstances += o.count;
  });
  for (const k of Object.keys(groups)) root.traverse((o) => { if (o.name === k) groups[k].push(o); });
  three.add(root);
  root.updateMatrixWorld(true);
  const big = [];
  root.traverse((o) => { if (o.isInstancedMesh && kindOf(o) === 'grass' && o.count > 64) big.push(o); });
  for (const o of big) splitInstances(o);
  root.updateMatrixWorld(true);   // the blocks' world matrices before the first cull
}

// A tile's grass model is one instanced mesh (export gltf's EXT_mesh_gpu_instancing node): split into
// blocks of 2x2 chunks, each culled by the frustum and the draw distance, as the view culls per chunk.
const BLOCK = 533.3333 / 8;
const grassBlocks = [];
function splitInstances(mesh) {
  const m = new THREE.Matrix4(), w = new THREE.Matrix4(), buckets = new Map();
  for (let i = 0; i < mesh.count; i++) {
    mesh.getMatrixAt(i, m);
    w.multiplyMatrices(mesh.matrixWorld, m);
    const key = Math.floor(w.elements[12] / BLOCK) + ',' + Math.floor(w.elements[14] / BLOCK);
    if (!buckets.has(key)) buckets.set(key, []);
    buckets.get(key).push(i);
  }
  for (const idx of buckets.values()) {
    const part = new THREE.InstancedMesh(mesh.geometry, mesh.material, idx.length);
    idx.forEach((i, k) => { mesh.getMatrixAt(i, m); part.setMatrixAt(k, m); });
    part.position.copy(mesh.position);
    part.quaternion.copy(mesh.quaternion);
    part.scale.copy(mesh.scale);
    part.name = mesh.name;
    part.computeBoundingSphere();
    part.frustumCulled = true;
    mesh.parent.add(part);
    grassBlocks.push(part);
  }
  mesh.parent.remove(mesh);
}
const sphere = new THREE.Sphere();
function cullGrass() {   // the draw distance, in XY as the view's (per block: a few hundred a tile)
  const cx = camera.position.x, cz = camera.position.z, reach = G.draw_distance;
  for (const b of grassBlocks) {
    sphere.copy(b.boundingSphere).applyMatrix4(b.matrixWorld);
    b.visible = Math.hypot(sphere.center.x - cx, sphere.center.z - cz) - sphere.radius < reach;
  }
}
try {
  await Promise.all(scene.tiles.map(loadTile));
} catch (e) {
  wowgrassError(`a tile did not load: ${e && (e.message || e)}`);
  throw e;
}

W.timings.tiles_loaded = performance.now();

// --- the fly camera: the view's keys and mouse -----------------------------------------------------------
const cam = { pos: [...scene.camera.position], yaw: 0, pitch: 0, speed: 12 };
function lookAt(target) {
  const d = target.map((v, i) => v - cam.pos[i]);
  cam.yaw = Math.atan2(d[1], d[0]);
  cam.pitch = Math.atan2(d[2], Math.hypot(d[0], d[1]));
}
lookAt(scene.camera.target);
if (hash.has('camera')) { cam.pos = nums(hash.get('camera')); lookAt(hash.has('target') ? nums(hash.get('target')) : [cam.pos[0] + 1, cam.pos[1], cam.pos[2]]); }
// the ground under the camera (scene.json: each tile's vertex heights), for the fog and near plane
const TILE = 533.33333, ZERO = 32 * TILE, CELL = TILE / 128;
const heightGrids = new Map(scene.tiles.map((t) => {
  const b = atob(t.heights.decimetres), v = new Int16Array(b.length / 2);
  for (let i = 0; i < v.length; i++) v[i] = (b.charCodeAt(2 * i) | (b.charCodeAt(2 * i + 1) << 8)) << 16 >> 16;
  return [t.col + ',' + t.row, v];
}));
function groundAt(x, y) {
  const col = Math.floor((ZERO - y) / TILE), row = Math.floor((ZERO - x) / TILE);
  const g = heightGrids.get(col + ',' + row);
  if (!g) return null;
  const fx = (ZERO - col * TILE - y) / CELL, fy = (ZERO - row * TILE - x) / CELL;
  const i = Math.min(Math.floor(fx), 127), j = Math.min(Math.floor(fy), 127), u = fx - i, v = fy - j;
  const h = (a, b) => g[b * 129 + a] / 10;
  return (h(i, j) * (1 - u) + h(i + 1, j) * u) * (1 - v) + (h(i, j + 1) * (1 - u) + h(i + 1, j + 1) * u) * v;
}
const forward = () => [Math.cos(cam.pitch) * Math.cos(cam.yaw), Math.cos(cam.pitch) * Math.sin(cam.yaw), Math.sin(cam.pitch)];
function placeCamera() {
  const f = forward();
  camera.position.copy(toThree(...cam.pos));
  camera.up.set(0, 1, 0);
  camera.lookAt(toThree(cam.pos[0] + f[0], cam.pos[1] + f[1], cam.pos[2] + f[2]));
  U.uCamXY.value.set(cam.pos[0], cam.pos[1]);
  // as the view: fog, far and near planes open up with the height above the ground
  const ground = groundAt(cam.pos[0], cam.pos[1]);
  const above = ground === null ? 0 : Math.max(cam.pos[2] - ground, 0);
  const end = Math.min(baseFog[1] + 4 * above, Math.max(TERRAIN_REACH, baseFog[1]));
  U.uFog.value.set(Math.min(baseFog[0] + above, 0.5 * end), end);
  camera.near = Math.min(Math.max(0.2, 0.01 * above), 4.0);
  camera.far = Math.max(end * 1.1, 500);
  camera.updateProjectionMatrix();
  sky.position.copy(camera.position);
  sky.scale.setScalar(camera.near * 4 + 1);
}
const keys = new Set();
const toggles = { KeyG: 'grass', KeyO: 'doodads', KeyT: 'terrain', KeyB: 'wmos', KeyR: 'water' };
let paused = false;
addEventListener('keydown', (e) => {
  if (e.target.tagName === 'INPUT' && e.code !== 'Escape') return;
  keys.add(e.code);
  if (toggles[e.code]) for (const o of groups[toggles[e.code]]) o.visible = !o.visible;
  else if (e.code === 'BracketLeft') setHour(hour - 2);
  else if (e.code === 'BracketRight') setHour(hour + 2);
  else if (e.code === 'KeyP') paused = !paused;
  else if (e.code === 'F1' || e.key === '?') { document.getElementById('panel').classList.toggle('hidden'); e.preventDefault(); }
});
addEventListener('keyup', (e) => keys.delete(e.code));
addEventListener('blur', () => keys.clear());
let dragging = false;
renderer.domElement.addEventListener('pointerdown', (e) => { dragging = true; renderer.domElement.setPointerCapture(e.pointerId); });
renderer.domElement.addEventListener('pointerup', () => { dragging = false; });
renderer.domElement.addEventListener('pointermove', (e) => {
  if (!dragging) return;
  cam.yaw = (cam.yaw - e.movementX * 0.003) % (2 * Math.PI);
  cam.pitch = Math.min(Math.max(cam.pitch - e.movementY * 0.003, -1.55), 1.55);
});
renderer.domElement.addEventListener('wheel', (e) => {
  cam.speed = Math.min(Math.max(cam.speed * Math.pow(1.25, -Math.sign(e.deltaY)), 0.5), 2000); e.preventDefault();
}, { passive: false });
function fly(dt) {
  const v = cam.speed * (keys.has('ShiftLeft') || keys.has('ShiftRight') ? 6 : 1) * dt;
  const fwd = keys.has('KeyW') - keys.has('KeyS'), right = keys.has('KeyD') - keys.has('KeyA');
  const up = (keys.has('KeyE') || keys.has('Space')) - keys.has('KeyQ');
  const f = forward(), r = [Math.sin(cam.yaw), -Math.cos(cam.yaw), 0];
  for (let i = 0; i < 3; i++) cam.pos[i] += (f[i] * fwd + r[i] * right) * v;
  cam.pos[2] += up * v;
}
addEventListener('resize', () => {
  renderer.setSize(innerWidth, innerHeight);
  camera.aspect = innerWidth / innerHeight;
});

// --- frames ----------------------------------------------------------------------------------------------------
const t0 = performance.now();
let sceneTime = hash.has('time') ? Number(hash.get('time')) : 0, last = performance.now();
function draw() {
  placeCamera();
  U.uTime.value = sceneTime;
  cullGrass();
  renderer.render(three, camera);
}
const gl = renderer.getContext();
const px = new Uint8Array(4);
function finish() { gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, px); }   // waits for the frame
placeCamera();
renderer.compile(three, camera);   // every program linked before the first frame's draws
W.timings.compiled = performance.now();
draw();
finish();
W.firstFrameMs = performance.now();   // since the navigation started
W.tiles = scene.tiles.length;
W.grassInstances = grassInstances;
W.measure = (frames) => {   // ms per frame, each waited for (the benchmark)
  const s = performance.now();
  for (let i = 0; i < frames; i++) { sceneTime += 1 / 60; draw(); finish(); }
  return (performance.now() - s) / frames;
};
for (const k of (hash.get('hide') || '').split(',')) if (groups[k]) for (const o of groups[k]) o.visible = false;
if (hash.has('hide')) { draw(); finish(); }
W.stats = () => ({ blocks: grassBlocks.length, visible_blocks: grassBlocks.filter((b) => b.visible).length,
                   calls: renderer.info.render.calls, triangles: renderer.info.render.triangles });
W.view = () => ({ position: [...cam.pos], yaw: cam.yaw, pitch: cam.pitch, hour,
                  grass: groups.grass.every((o) => o.visible), sun: U.uSunColor.value.toArray() });
W.ready = true;
statusEl.textContent = `${scene.tiles.length} tile(s), ${grassInstances.toLocaleString()} grass instances; ` +
                       `first frame ${Math.round(W.firstFrameMs)} ms`;
if (hash.has('ui') && hash.get('ui') === '0') document.getElementById('panel').style.display = 'none';
function loop(now) {
  const dt = Math.min((now - last) / 1000, 0.1);
  last = now;
  if (!paused) sceneTime += dt;
  fly(dt);
  draw();
  requestAnimationFrame(loop);
}
if (!hash.has('still')) requestAnimationFrame(loop);
