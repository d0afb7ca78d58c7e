import type { LeaderInfo, Registry } from '@rollcall/core';
import type { Instruments } from './instruments.js';

/**
 * `rollcall_election_leader`, `rollcall_leadership_changes_total` for every
 * campaign of this process (from the registry's `elected` and
 * `leadershipLost`), and `rollcall_election_leader_present`,
 * `rollcall_election_leader_changes_total` for the elections it observes
 * (each through `observe`, or all through `watchElections`);
 * `rollcall_election_fencing_token` from both.
 */
export function trackElections(registry: Registry, m: Instruments, observed: readonly string[] | 'all', maxObserved = 1000): () => void {
  /** The identities of this process leading each election now (a process may campaign under several). */
  const leading = new Map<string, Set<string>>();
  const tokens = new Map<string, number>();
  const seeToken = (election: string, token: number) => {
    // Tokens only grow: the latest term is the largest, whichever view saw it first.
    const latest = Math.max(tokens.get(election) ?? 0, token);
    tokens.set(election, latest);
    m.electionFencingToken.set({ election }, latest);
  };
  const setLeading = (election: string, identity: string, leads: boolean) => {
    const set = leading.get(election) ?? leading.set(election, new Set()).get(election)!;
    if (leads) set.add(identity);
    else set.delete(identity);
    m.electionLeader.set({ election }, set.size > 0 ? 1 : 0);
  };

  const offs = [
    registry.on('elected', ({ election, identity, fencingToken }) => {
      setLeading(election, identity, true);
      seeToken(election, fencingToken);
      m.leadershipChanges.inc({ election, event: 'elected' });
    }),
    registry.on('leadershipLost', ({ election, identity, reason }) => {
      setLeading(election, identity, false);
      m.leadershipChanges.inc({ election, event: 'lost', reason });
    }),
  ];

  const show = (election: string, leader: LeaderInfo | undefined) => {
    m.electionLeaderPresent.set({ election }, leader ? 1 : 0);
    if (leader) seeToken(election, leader.fencingToken);
  };
  const closers: (() => void)[] = [];
  if (observed === 'all') {
    const withSeries = new Set<string>();
    const unobserved = new Set<string>();
    m.electionsUnobserved.set(0);
    const subscription = registry.watchElections((event) => {
      const election = event.lease.name;
      if (event.type === 'removed') {
        unobserved.delete(election);
        m.electionsUnobserved.set(unobserved.size);
        if (!withSeries.delete(election)) return;
        // A gone election's series go too: the label set is the live elections, at most maxObserved of them.
        for (const gauge of [m.electionLeaderPresent, m.electionFencingToken]) gauge.remove({ election });
        m.electionLeaderChanges.remove({ election });
        tokens.delete(election);
        return;
      }
      if (!withSeries.has(election)) {
        if (withSeries.size >= maxObserved) {
          unobserved.add(election);
          m.electionsUnobserved.set(unobserved.size);
          return;
        }
        withSeries.add(election);
      }
      show(election, event.lease.holder);
      seeToken(election, event.lease.fencingToken);
      if (event.type === 'added') m.electionLeaderChanges.inc({ election }, 0);
      else m.electionLeaderChanges.inc({ election });
    });
    closers.push(() => subscription.close());
  } else {
    for (const election of observed) {
      const observer = registry.observe(election);
      show(election, observer.leader);
      m.electionLeaderChanges.inc({ election }, 0);
      // The leader as first listed is the state: no change event reports it.
      observer.ready().then((leader) => show(election, leader), () => {});
      observer.on('changed', ({ leader }) => {
        show(election, leader);
        m.electionLeaderChanges.inc({ election });
      });
      closers.push(() => observer.close());
    }
  }

  return () => {
    offs.forEach((off) => off());
    closers.forEach((close) => close());
  };
}
