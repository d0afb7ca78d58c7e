/**
 * What installing Rollcall costs a user: packages and MiB of node_modules for
 * core + kubernetes, and for the CLI alone laid out as `npm install --global`
 * lays it out. Packs every package (or reads `--tarballs <dir>`) and installs
 * into fresh projects outside the repository.
 *
 *   npm run build && node release/dist/install-weight.js [--tarballs <dir>]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { diskUsageMb, freshProject, installedPackages } from './fresh-project.js';
import { packAll, type Tarball } from './pack.js';

export interface Weight {
  what: string;
  packages: number;
  mb: number;
  /** The heaviest installed packages, MiB. */
  heaviest: { name: string; mb: number }[];
  /** Packages installed more than once, with their copies. */
  duplicates: { name: string; copies: number }[];
}

/** Reads name and version out of tarballs packed earlier (e.g. of another commit). */
function readTarballs(dir: string): Tarball[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.tgz'))
    .map((f) => {
      const file = join(dir, f);
      const manifest = JSON.parse(execFileSync('tar', ['-xOzf', file, 'package/package.json'], { encoding: 'utf8' })) as { name: string; version: string };
      return { name: manifest.name, version: manifest.version, file, files: [] };
    });
}

export function measure(tarballs: readonly Tarball[], what: string, rollcall: string[], installStrategy: 'hoisted' | 'shallow'): Weight {
  const project = freshProject(tarballs, { rollcall, installStrategy });
  try {
    const installed = installedPackages(project.dir);
    const byName = new Map<string, number>();
    for (const p of installed) byName.set(p.name, (byName.get(p.name) ?? 0) + 1);
    const heaviest = installed
      .map((p) => ({ name: p.name, mb: diskUsageMb(join(project.dir, p.path), { ownOnly: true }) }))
      .sort((a, b) => b.mb - a.mb)
      .slice(0, 3);
    return {
      what,
      packages: installed.length,
      mb: diskUsageMb(join(project.dir, 'node_modules')),
      heaviest,
      duplicates: [...byName].filter(([, n]) => n > 1).map(([name, copies]) => ({ name, copies })),
    };
  } finally {
    rmSync(project.dir, { recursive: true, force: true });
  }
}

export function weightTable(weights: readonly Weight[]): string {
  const rows = weights.map((w) => {
    const client = w.duplicates.find((d) => d.name === '@kubernetes/client-node');
    return `| ${w.what} | ${w.packages} | ${w.mb.toFixed(0)} | ${w.heaviest.map((h) => `${h.name} ${h.mb.toFixed(0)}`).join(', ')} | ${client ? `${client.copies} copies of @kubernetes/client-node` : w.duplicates.length ? w.duplicates.map((d) => `${d.name} ×${d.copies}`).join(', ') : 'none'} |`;
  });
  return ['| install | packages | MiB | heaviest (MiB) | duplicates |', '|---|---:|---:|---|---|', ...rows].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { tarballs: { type: 'string' } } });
  const packed = values.tarballs ? undefined : mkdtempSync(join(tmpdir(), 'rollcall-tarballs-'));
  const tarballs = values.tarballs ? readTarballs(values.tarballs) : packAll(packed!);
  try {
    const weights = [measure(tarballs, '`@rollcall/core` + `@rollcall/kubernetes`', ['@rollcall/core', '@rollcall/kubernetes'], 'hoisted'), measure(tarballs, '`@rollcall/cli` (global layout)', ['@rollcall/cli'], 'shallow')];
    process.stdout.write(weightTable(weights) + '\n');
  } finally {
    if (packed) rmSync(packed, { recursive: true, force: true });
  }
}
