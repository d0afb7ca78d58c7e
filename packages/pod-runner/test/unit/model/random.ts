/** A small seeded generator (mulberry32, as core's test harness has it): a failing sequence is replayed by its seed. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Draws from one seeded generator. */
export class Rng {
  readonly next: () => number;
  constructor(readonly seed: number) {
    this.next = seeded(seed);
  }
  /** true with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }
  /** A whole number from `min` to `max`, both included. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
}
