import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** A workspace package whose vitest config has projects, and whether its `test` script runs each. */
export interface ProjectCoverage {
  dir: string;
  projects: string[];
  /** Projects the `test` script names with `--project`. */
  run: string[];
}

/** The `--project` names of a test script, in order. */
export function projectsRun(script: string): string[] {
  return [...script.matchAll(/--project[= ](\S+)/g)].map((m) => m[1]!);
}

/** Every workspace package (under `root`) whose vitest.config.ts declares projects, with the projects its test script runs. */
export async function projectCoverage(root: string): Promise<ProjectCoverage[]> {
  const dirs = [...readdirSync(join(root, 'packages')).map((d) => join('packages', d)), 'tools', 'e2e', 'release'];
  const found: ProjectCoverage[] = [];
  for (const dir of dirs) {
    const configFile = join(root, dir, 'vitest.config.ts');
    if (!existsSync(configFile)) continue;
    const config = ((await import(pathToFileURL(configFile).href)) as { default: { test?: { projects?: { test?: { name?: string } }[] } } }).default;
    const projects = config.test?.projects?.map((p) => p.test?.name ?? '(unnamed)') ?? [];
    if (projects.length === 0) continue;
    const script = (JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as { scripts?: { test?: string } }).scripts?.test ?? '';
    found.push({ dir, projects, run: projectsRun(script) });
  }
  return found;
}
