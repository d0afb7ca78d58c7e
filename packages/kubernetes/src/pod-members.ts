import { memberKey, type PodMemberListing, type RecordList } from '@rollcall/core/spi';
import { LABEL_VALUE, POD_UID_LABEL } from './codec.js';
import { prefixSelector } from './selectors.js';

/** Lists the records under a prefix that match a label selector (and a field selector): the store's paged list. */
export type SelectedList = (prefix: string, labelSelector: string, fieldSelector: string | undefined) => Promise<RecordList>;

/**
 * A role's members of one pod, by the POD_UID_LABEL a pod-mode member Lease
 * carries: one request however many members the role has.
 */
export class PodMembers implements PodMemberListing {
  constructor(
    private readonly cluster: string,
    private readonly listSelected: SelectedList,
  ) {}

  async listPodMembers(role: string, podUid: string): Promise<RecordList> {
    const prefix = memberKey(role, '');
    const selector = prefixSelector(this.cluster, prefix);
    // A uid that cannot be a label value is never written as one: list the role.
    return this.listSelected(prefix, LABEL_VALUE.test(podUid) ? `${selector},${POD_UID_LABEL}=${podUid}` : selector, undefined);
  }
}
