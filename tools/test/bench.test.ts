import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { percentile, summarize } from '../testenv/measure/stats.js';
import { COLUMNS } from '../bench/table.js';

const CLI = fileURLToPath(new URL('../bench/cli.ts', import.meta.url));

/** Runs the benchmark's command line as `npm run bench` does (without the build), resolving with its exit code and output. */
async function bench(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', CLI, ...args], { timeout: 120_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout: string; stderr: string };
    return { code: e.code ?? -1, stdout: e.stdout, stderr: e.stderr };
  }
}

/** The cells of each table line of `output`. */
function tableCells(output: string): string[][] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('|'))
    .map((line) => line.slice(1, -1).split('|').map((cell) => cell.trim()));
}

describe('npm run bench', () => {
  it('prints one table, a row per backend with every column, on memory and sqlite with tiny rounds', async () => {
    const { code, stdout, stderr } = await bench(['--backends', 'sqlite,memory', '--rounds', '2', '--failover-rounds', '1', '--lock-seconds', '0.5', '--idle-seconds', '0.5']);
    expect(code, stderr).toBe(0);
    const [header, rule, ...rows] = tableCells(stdout);
    expect(header).toEqual(COLUMNS.map((c) => c.header));
    expect(rule!.every((cell) => /^-+:?$/.test(cell))).toBe(true);
    // the table's order, whatever the command line's
    expect(rows.map((row) => row[0])).toEqual(['memory', 'sqlite']);
    for (const row of rows) {
      expect(row).toHaveLength(COLUMNS.length);
      const cell = (header: string) => row[COLUMNS.findIndex((c) => c.header === header)]!;
      for (const latency of ['handover p50 / p99 ms', 'crash failover p50 / p99 ms', 'announce → added p50 / p99 ms', 'lock wait p50 / p99 ms', 'lock hand-off p50 / p99 ms']) {
        expect(cell(latency)).toMatch(/^\d+\.\d \/ \d+\.\d$/);
      }
      expect(cell('lock ops/s (10 contenders)')).toMatch(/^\d+\.\d$/);
      // no server to count requests: n/a, with the reason under the table
      for (const role of ['idle registry', 'member', 'leader', 'follower']) expect(cell(`req/min ${role}`)).toBe('n/a');
    }
    expect(stdout).toMatch(/^- memory: .*requests n\/a: in-process store, no server\.$/m);
    expect(stdout).toMatch(/^- sqlite: .*requests n\/a: embedded in the process, no server\.$/m);
  });

  it('refuses an unknown backend, naming the known ones', async () => {
    const { code, stdout, stderr } = await bench(['--backends', 'memory,cassandra']);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain('--backends: no backend "cassandra"; known: memory, sqlite, mysql, postgres, etcd, zookeeper, kubernetes');
  });
});

describe('percentile', () => {
  it('is the nearest rank: p50 of 1..100 is 50, p99 is 99; with fewer than 100 samples p99 is the maximum', () => {
    const hundred = Array.from({ length: 100 }, (_, i) => 100 - i);
    expect(percentile(hundred, 50)).toBe(50);
    expect(percentile(hundred, 99)).toBe(99);
    expect(summarize([5, 1, 3])).toEqual({ n: 3, p50: 3, p99: 5, max: 5 });
    expect(() => percentile([], 50)).toThrow('percentile of no samples');
  });
});
