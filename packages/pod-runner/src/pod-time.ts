import type { Clock } from '@rollcall/core';

/**
 * Deadlines read from a pod's own timestamps (creation, a condition's
 * transition, the container's start) are wall-clock instants: they survive a
 * runner restart or a failover, which a monotonic reading would not. They are
 * converted to the clock's monotonic time once, when a timer is armed — the
 * wall clock is read at that moment and never again for that deadline — so a
 * wall-clock jump afterwards neither fires the timer early nor holds it back.
 */

/** Milliseconds from now until the wall-clock instant `wallMs`, 0 when it has passed. */
export function delayUntilWall(clock: Clock, wallMs: number): number {
  return Math.max(0, wallMs - clock.wallNow().getTime());
}
