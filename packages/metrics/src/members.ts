import type { MemberEvent, Registry } from '@rollcall/core';
import type { Instruments } from './instruments.js';

/**
 * `rollcall_members` and `rollcall_member_events_total`: for the roles named,
 * through `watchMembers`; otherwise for every role the registry reads (lists
 * or watches), from a snapshot and the registry's member events.
 */
export function trackMembers(registry: Registry, m: Instruments, roles: readonly string[] | undefined): () => void {
  const present = new Map<string, Set<string>>();
  const ids = (role: string) => present.get(role) ?? present.set(role, new Set()).get(role)!;
  const publish = (role: string) => m.members.set({ role }, ids(role).size);
  const apply = (event: MemberEvent, counted: boolean) => {
    const { role, id } = event.member;
    if (event.type === 'removed') ids(role).delete(id);
    else ids(role).add(id);
    publish(role);
    if (counted) m.memberEvents.inc(event.type === 'removed' ? { role, event: event.type, reason: event.reason } : { role, event: event.type });
  };

  if (roles) {
    const subscriptions = roles.map((role) => {
      publish(role);
      // watchMembers first calls back with every current member — at once, or once the role is
      // listed, which members() resolving marks: the state, not a change.
      let seeding = true;
      const subscription = registry.watchMembers(role, (event) => apply(event, !seeding));
      registry.members(role).then(
        () => (seeding = false),
        () => (seeding = false),
      );
      return subscription;
    });
    return () => subscriptions.forEach((s) => s.close());
  }

  const offs = [registry.on('memberAdded', (e) => apply(e, true)), registry.on('memberUpdated', (e) => apply(e, true)), registry.on('memberRemoved', (e) => apply(e, true))];
  // The members present before these events: each snapshot is taken when members() is called, so adding
  // it to what the events said since is exact (a member removed since is in neither).
  void (async () => {
    // Only the roles the application reads: counting every role would make this process watch them all.
    for (const role of registry.watchedRoles()) {
      for (const member of await registry.members(role)) ids(role).add(member.id);
      publish(role);
    }
  })().catch(() => {});
  return () => offs.forEach((off) => off());
}
