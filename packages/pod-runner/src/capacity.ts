import type { CapacityOptions } from './options.js';

/** Slots for pods pending or running: a total and, for some task types, a limit of their own. */
export class Capacity {
  private active = 0;
  private readonly byType = new Map<string, number>();

  constructor(private readonly limits: Required<CapacityOptions>) {}

  /** No task of any type may start. */
  get full(): boolean {
    return this.active >= this.limits.total;
  }

  hasRoom(taskType: string): boolean {
    if (this.full) return false;
    const limit = this.limits.perType[taskType];
    return limit === undefined || (this.byType.get(taskType) ?? 0) < limit;
  }

  take(taskType: string): void {
    this.active += 1;
    this.byType.set(taskType, (this.byType.get(taskType) ?? 0) + 1);
  }

  free(taskType: string): void {
    this.active -= 1;
    this.byType.set(taskType, (this.byType.get(taskType) ?? 1) - 1);
  }
}
