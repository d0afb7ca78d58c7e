import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

// Two copies of the built core in one process, as a global `rollcall` and a
// backend installed globally beside it have: the built package, and a copy of it elsewhere.
const DIST = new URL('../dist/index.js', import.meta.url).href;
const copy = mkdtempSync(join(tmpdir(), 'rollcall-core-copy-'));
cpSync(fileURLToPath(new URL('../dist/', import.meta.url)), join(copy, 'dist'), { recursive: true });
writeFileSync(join(copy, 'package.json'), JSON.stringify({ type: 'module' }));
afterAll(() => rmSync(copy, { recursive: true, force: true }));
const COPY = pathToFileURL(join(copy, 'dist', 'index.js')).href;

describe('errors from another copy of @rollcall/core', () => {
  it('are instanceof this copy\'s classes by name, and hasCode reads them', () => {
    const script = `
const app = await import(${JSON.stringify(DIST)});
const plugin = await import(${JSON.stringify(COPY)});
if (app.RegistryError === plugin.RegistryError) throw new Error('not two copies');
const unavailable = new plugin.UnavailableError('down', { backend: 'etcd' });
const config = new plugin.ConfigurationError('bad', { key: 'registry.x' });
console.log(JSON.stringify({
  registry: unavailable instanceof app.RegistryError,
  unavailable: unavailable instanceof app.UnavailableError,
  notConfig: unavailable instanceof app.ConfigurationError,
  config: config instanceof app.ConfigurationError,
  hasCode: app.hasCode(unavailable, 'UNAVAILABLE'),
  plainError: new Error('x') instanceof app.RegistryError,
  lookalike: Object.assign(new Error('x'), { code: 'UNAVAILABLE', name: 'UnavailableError' }) instanceof app.RegistryError,
  sameCopy: new app.UnavailableError('down') instanceof app.UnavailableError,
}));`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual({ registry: true, unavailable: true, notConfig: false, config: true, hasCode: true, plainError: false, lookalike: false, sameCopy: true });
  });
});
