import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { publishedPackages } from '../src/workspace.js';

// The one form every package README's install line has (core's installLine prints it in
// PLUGIN_NOT_INSTALLED): while unpublished, from a checkout; the npm line it becomes.
const LINE = /^npm --prefix <rollcall checkout> run install-from-checkout -- ((?:@rollcall\/[a-z-]+ ?)+)   # not on npm yet; published: npm install (.+)$/;

describe("every package README's install line", () => {
  const readmes = publishedPackages()
    .map((p) => ({ name: p.manifest.name, file: join(p.dir, 'README.md') }))
    .map((r) => ({ ...r, lines: readFileSync(r.file, 'utf8').split('\n') }));

  it.each(readmes.filter((r) => r.lines.some((l) => /^npm |^npx /.test(l))).map((r) => [r.name, r] as const))('%s: one install line in the form, naming itself; no registry install of a @rollcall package', (name, r) => {
    const lines = r.lines.filter((l) => LINE.test(l));
    expect(lines, r.file).toHaveLength(1);
    const [, packages, published] = lines[0]!.match(LINE)!;
    expect(packages!.trim().split(' ')).toContain(name);
    expect(published).toBe(packages!.trim());
    expect(r.lines.filter((l) => /^\s*(npm (install|i)|npx) (-g )?@rollcall\//.test(l))).toEqual([]);
  });

  it('the form catches a line that answers 404 today, and one naming other packages when published', () => {
    expect(LINE.test('npm install @rollcall/core @rollcall/etcd')).toBe(false);
    const drifted = 'npm --prefix <rollcall checkout> run install-from-checkout -- @rollcall/core   # not on npm yet; published: npm install @rollcall/core @rollcall/etcd';
    const [, packages, published] = drifted.match(LINE)!;
    expect(published).not.toBe(packages!.trim());
  });
});
