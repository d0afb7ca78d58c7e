// One line and exit 1 when this Node.js is below the repository's engines floor, before
// a dependency fails deep inside (better-sqlite3 13, vitest 5 and undici 8 need Node 22).
// CommonJS and old syntax on purpose: it must run on the Node it refuses.
'use strict';
var path = require('path');
var floor = require(path.join(__dirname, '..', '..', 'package.json')).engines.node.replace(/^>=\s*/, '');
var want = require('fs').readFileSync(path.join(__dirname, '..', '..', '.nvmrc'), 'utf8').trim();
function parts(v) { return v.replace(/^v/, '').split('.').map(Number); }
var have = parts(process.version), need = parts(floor);
for (var i = 0; i < 3; i++) {
  if (have[i] > need[i]) process.exit(0);
  if (have[i] < need[i]) {
    console.error('[rollcall] Node.js ' + process.version + ' is below this repository\'s floor ' + floor + ' (tested on 22, 24 and 26; developed on ' + want + '): run eval "$(tools/runtime/node-env)" to use ' + want + ' from the npm registry, or nvm use');
    process.exit(1);
  }
}
