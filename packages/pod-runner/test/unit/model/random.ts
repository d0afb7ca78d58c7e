import { seeded } from '@rollcall/core/testing';

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
