import type { RecordList, RecordStore } from './store.js';
import { supports } from './store-supports.js';

/**
 * An optional capability of a backend's store, for `registry.member.liveness=pod`:
 * the member records of one role that say one pod, found without listing the
 * role (on Kubernetes, a label with the pod uid on pod-mode member Leases). An
 * announce in a pod uses it to find what an earlier container of its pod left;
 * a store without it lists the whole role instead, which costs O(members) per
 * announce. A store that has it declares `supports.podMemberListing` and holds
 * it as `podMembers`.
 */
export interface PodMemberListing {
  /**
   * The records under `member/{role}/` whose liveness says pod `podUid` —
   * possibly with others besides (the caller filters), never without one.
   */
  listPodMembers(role: string, podUid: string): Promise<RecordList>;
}

/** The store's pod member listing (`supports.podMemberListing`), or undefined when its backend declares none. */
export function podMemberListingOf(store: RecordStore): PodMemberListing | undefined {
  return supports(store, 'podMemberListing') ? (store as RecordStore & { podMembers: PodMemberListing }).podMembers : undefined;
}
