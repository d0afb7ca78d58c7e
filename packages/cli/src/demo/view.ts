import { performance } from 'node:perf_hooks';
import type { LeaderInfo, LeaderObserver, Member, Registry } from '@rollcall/core';
import { shortIncarnation } from '../output.js';

/** A removal the view saw: who, why, when (performance.now()). */
export interface Removal {
  id: string;
  incarnation: string;
  reason: string;
  at: number;
}

/**
 * The cluster as the library shows it to an application: the demo's own
 * registry, which only watches (`watchMembers` for both roles, `observe` of
 * the `scheduler` election). Events alone decide who is present; the list is
 * refreshed for each member's last renewal, which a heartbeat that keeps the
 * payload does not announce.
 */
export class ClusterView {
  readonly members = new Map<string, Member>();
  readonly removals: Removal[] = [];
  /** The leader from the last `changed` event (its term's first renewal); `current` has the latest. */
  leader: LeaderInfo | undefined;
  private observer: LeaderObserver | undefined;

  constructor(
    readonly registry: Registry,
    private readonly log: (line: string) => void,
    private readonly changed: () => void,
  ) {}

  start(): void {
    for (const role of ['master', 'worker']) {
      this.registry.watchMembers(role, (e) => {
        const key = `${e.member.role}/${e.member.id}`;
        const who = `${e.member.id} #${shortIncarnation(e.member.incarnation)}`;
        if (e.type === 'removed') {
          this.members.delete(key);
          this.log(`${who} left (${e.reason === 'deleted' ? 'record deleted: withdrawn' : e.reason})`);
          this.removals.push({ id: e.member.id, incarnation: e.member.incarnation, reason: e.reason, at: performance.now() });
        } else {
          if (e.type === 'added') this.log(`${who} joined`);
          this.members.set(key, e.member);
        }
        this.changed();
      });
    }
    const observer = (this.observer = this.registry.observe('scheduler'));
    this.leader = observer.leader;
    observer.on('changed', ({ leader, previous }) => {
      this.leader = leader;
      if (leader) this.log(`leader ${leader.identity}, fencing token ${leader.fencingToken}`);
      else this.log(`no leader (was ${previous?.identity ?? 'none'})`);
      this.changed();
    });
  }

  /** The leader now, with its latest renewal. */
  get current(): LeaderInfo | undefined {
    return this.observer?.leader ?? this.leader;
  }

  member(kind: string, id: string): Member | undefined {
    return this.members.get(`${kind}/${id}`);
  }

  /** The first removal of `id` at or after `since` (performance.now()). */
  removedSince(id: string, since: number): Removal | undefined {
    return this.removals.find((r) => r.id === id && r.at >= since);
  }

  /** Takes each present member from the registry's current list, for its last renewal. */
  async refresh(): Promise<void> {
    const current = await Promise.all(['master', 'worker'].map((role) => this.registry.members(role))).catch(() => []);
    for (const m of current.flat()) {
      const key = `${m.role}/${m.id}`;
      if (this.members.has(key)) this.members.set(key, m);
    }
  }

  close(): void {
    this.observer?.close();
  }
}
