import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { projectCoverage, projectsRun } from '../src/test-scripts.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

// A package runs its vitest projects one run per test instance (package.json's test script names
// each with --project): a project added to vitest.config.ts but not to the script would never run.
describe("every vitest project is run by its package's test script", () => {
  it('packages, tools and e2e', async () => {
    const coverage = await projectCoverage(ROOT);
    expect(coverage.map((c) => c.dir)).toEqual(expect.arrayContaining(['packages/kubernetes', 'packages/pod-runner', 'tools']));
    for (const c of coverage) expect({ dir: c.dir, projects: [...c.run].sort() }).toEqual({ dir: c.dir, projects: [...c.projects].sort() });
  });

  it('reads --project names as the script gives them', () => {
    expect(projectsRun('tsc -p tsconfig.json --noEmit && vitest run --project pod-runner --project unit && vitest run --project=real-node')).toEqual(['pod-runner', 'unit', 'real-node']);
    expect(projectsRun('vitest run')).toEqual([]);
  });
});
