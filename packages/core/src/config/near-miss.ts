/** Edits between two strings: insert, delete, substitute, or swap two neighbours (optimal string alignment). */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The known name a mistyped one most likely meant, or undefined: one that
 * differs by a few edits (case aside), else the only one with the same last
 * segment in another group (`registry.namespace` → `registry.kubernetes.namespace`).
 */
export function nearMiss(given: string, known: Iterable<string>, separator = '.'): string | undefined {
  const names = [...known];
  const lower = given.toLowerCase();
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(given.length / 6)) + 1;
  for (const name of names) {
    const distance = editDistance(lower, name.toLowerCase());
    if (distance < bestDistance) [best, bestDistance] = [name, distance];
  }
  if (best !== undefined) return best;
  const last = (name: string) => name.slice(name.lastIndexOf(separator) + 1).toLowerCase();
  const sameLast = names.filter((name) => last(name) === last(given));
  return sameLast.length === 1 ? sameLast[0] : undefined;
}

/** How many known names an unknown one is answered with when none is a near miss. */
const NEAREST_COUNT = 3;

/** How many leading `separator`-separated segments two names share, case aside. */
function sharedSegments(a: string, b: string, separator: string): number {
  const [x, y] = [a.toLowerCase().split(separator), b.toLowerCase().split(separator)];
  let n = 0;
  while (n < x.length && n < y.length && x[n] === y[n]) n++;
  return n;
}

/**
 * The `count` known names closest to `given`, nearest first: those in its own
 * group before others (`registry.sqlite.file` → `registry.sqlite.*`), then by
 * edit distance (case aside); ties keep `known`'s order.
 */
export function nearestNames(given: string, known: Iterable<string>, separator = '.', count = NEAREST_COUNT): string[] {
  const lower = given.toLowerCase();
  return [...known]
    .map((name, index) => ({ name, index, shared: sharedSegments(given, name, separator), distance: editDistance(lower, name.toLowerCase()) }))
    .sort((a, b) => b.shared - a.shared || a.distance - b.distance || a.index - b.index)
    .slice(0, count)
    .map((n) => n.name);
}

/**
 * What to tell the user of an unknown key or variable, after "unknown key; ":
 * the one it most likely meant (`did you mean X?`), else the few nearest
 * (never the whole list, which for a backend is two dozen names). `noun` is
 * plural: `keys`, `variables`.
 */
export function unknownNameAdvice(given: string, known: Iterable<string>, noun: string, separator = '.'): string {
  const names = [...known];
  const guess = nearMiss(given, names, separator);
  if (guess !== undefined) return `did you mean ${guess}?`;
  return `the nearest known ${noun} are ${nearestNames(given, names, separator).join(', ')} (${names.length} in all)`;
}
