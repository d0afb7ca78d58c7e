import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as main from '../src/index.js';

const source = (file: string) => readFileSync(new URL(file, import.meta.url), 'utf8');

/** The names an entry file re-exports with `export { … } from` / `export type { … } from`. */
function exportedNames(file: string): string[] {
  const names: string[] = [];
  for (const m of source(file).matchAll(/export (?:type )?\{([^}]*)\} from '[^']+';/g)) {
    for (const part of m[1]!.split(',')) {
      const name = part.trim().replace(/^type\s+/, '').split(/\s+as\s+/).pop()!.trim();
      if (name) names.push(name);
    }
  }
  return names;
}

describe('@rollcall/core/spi', () => {
  const spi = exportedNames('../src/spi.ts');

  it('exports each name once, and none the main entry also exports (errors, Clock and Logger come from @rollcall/core)', () => {
    expect(new Set(spi).size).toBe(spi.length);
    const onMain = new Set([...exportedNames('../src/index.ts'), ...Object.keys(main)]);
    expect(spi.filter((name) => onMain.has(name))).toEqual([]);
  });

  it("the core README's count of its names is true", () => {
    const row = source('../README.md').split('\n').find((line) => line.startsWith('| `@rollcall/core/spi` |'));
    expect(row, 'the entry table of the core README has a /spi row').toBeDefined();
    expect(Number(/(\d+) names/.exec(row!)?.[1])).toBe(spi.length);
  });
});
