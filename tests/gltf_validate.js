// Validate .glb files with the Khronos glTF validator (npm: gltf-validator); prints one JSON
// report per file: {"file", "errors", "warnings", "messages": [errors and warnings]}.
const fs = require('fs');
const validator = require('gltf-validator');

(async () => {
  for (const file of process.argv.slice(2)) {
    const r = await validator.validateBytes(new Uint8Array(fs.readFileSync(file)), {maxIssues: 100});
    const serious = r.issues.messages.filter(m => m.severity <= 1);
    console.log(JSON.stringify({file, errors: r.issues.numErrors, warnings: r.issues.numWarnings,
                                messages: serious}));
  }
})().catch(e => { console.error(String(e)); process.exit(3); });
