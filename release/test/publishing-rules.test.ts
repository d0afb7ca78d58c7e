import { describe, expect, it } from 'vitest';
import { markdownLinks, publishingProblems } from '../src/publishing-rules.js';
import { publishedPackages, rootManifest, workspacePackages } from '../src/workspace.js';

const workspace = workspacePackages();
const published = publishedPackages();

describe('every published workspace package keeps the publishing rules', () => {
  it('finds the packages (a new one under packages/ is checked without being listed here)', () => {
    expect(published.map((p) => p.manifest.name)).toEqual(expect.arrayContaining(['@rollcall/core', '@rollcall/cli', '@rollcall/kubernetes', '@rollcall/sqlite']));
    expect(published.every((p) => p.path.startsWith('packages/'))).toBe(true);
  });

  it.each(published.map((p) => [p.manifest.name, p] as const))('%s', (_name, pkg) => {
    expect(publishingProblems(pkg, workspace, rootManifest())).toEqual([]);
  });
});

describe('the rules catch what they are for', () => {
  const core = published.find((p) => p.manifest.name === '@rollcall/core')!;
  const etcd = published.find((p) => p.manifest.name === '@rollcall/etcd')!;
  const broken = (pkg: typeof etcd, manifest: object) => publishingProblems({ ...pkg, manifest: { ...pkg.manifest, ...manifest } }, workspace, rootManifest());

  it('"*", a private workspace package, core as a dependency, a dev-only script, no access', () => {
    const problems = broken(etcd, {
      dependencies: { ...etcd.manifest.dependencies, '@rollcall/core': '*' },
      devDependencies: { '@rollcall/tools': '^0.0.0' },
      peerDependencies: {},
      scripts: { ...etcd.manifest.scripts, bench: 'tsx bench.ts' },
      publishConfig: {},
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^dependencies\.@rollcall\/core "\*": not a real range/),
        expect.stringMatching(/^devDependencies\.@rollcall\/tools: a private workspace package/),
        expect.stringMatching(/^dependencies\.@rollcall\/core: a library takes core as a peerDependency/),
        expect.stringMatching(/^peerDependencies\.@rollcall\/core: missing/),
        expect.stringMatching(/^scripts\.bench: dev-only/),
        expect.stringMatching(/^publishConfig\.access/),
      ]),
    );
  });

  it('metadata: engines, repository, files without LICENSE', () => {
    const problems = broken(core, { engines: { node: '>=20' }, repository: undefined, files: ['dist'], keywords: [] });
    expect(problems).toEqual(expect.arrayContaining([expect.stringMatching(/^engines\.node/), expect.stringMatching(/^repository/), expect.stringMatching(/^files: LICENSE missing/), expect.stringMatching(/^keywords/)]));
  });

  it('reads inline, reference and HTML links', () => {
    expect(markdownLinks('see [a](../../x.md) and [b](https://e.com/y "t")\n[ref]: ./z.md\n<a href="w.md">w</a>')).toEqual(['../../x.md', 'https://e.com/y', './z.md', 'w.md']);
  });
});
