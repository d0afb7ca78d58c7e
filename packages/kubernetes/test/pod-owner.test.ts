import { describe, expect, it } from 'vitest';
import { podOwner } from '../src/pod-owner.js';

const owner = (name: string, uid: string) => ({ apiVersion: 'v1', kind: 'Pod', name, uid, controller: false, blockOwnerDeletion: false });

describe('podOwner: the pod that owns member Leases', () => {
  it('from the downward API, only when POD_NAMESPACE is the records\' namespace', () => {
    const env = { POD_NAME: 'w-0', POD_NAMESPACE: 'prod', POD_UID: 'u-1' };
    expect(podOwner('prod', {}, env)).toEqual(owner('w-0', 'u-1'));
    expect(podOwner('other', {}, env)).toBeUndefined();
    expect(podOwner('prod', {}, { POD_NAME: 'w-0', POD_NAMESPACE: 'prod' })).toBeUndefined();
  });

  it('from the podName and podUid options: a pod of the records\' namespace, whatever POD_NAMESPACE says; each option over its variable', () => {
    expect(podOwner('prod', { podName: 'p', podUid: 'u' }, {})).toEqual(owner('p', 'u'));
    expect(podOwner('prod', { podName: 'p' }, { POD_UID: 'env-uid', POD_NAMESPACE: 'elsewhere' })).toEqual(owner('p', 'env-uid'));
    expect(podOwner('prod', { podUid: 'u' }, { POD_NAME: 'env-name', POD_NAMESPACE: 'prod' })).toEqual(owner('env-name', 'u'));
    // A uid alone names no pod to own anything.
    expect(podOwner('prod', { podUid: 'u' }, {})).toBeUndefined();
  });
});
