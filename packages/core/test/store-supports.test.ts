import { describe, expect, it } from 'vitest';
import { accessReviewOf, supports } from '../src/admin.js';
import { podMemberListingOf } from '../src/pod-member-listing.js';
import { podReadinessOf } from '../src/pod-readiness.js';
import type { RecordStore, StoreSupports } from '../src/spi.js';
import { MemoryBackend, MemoryStore } from '../src/testing.js';

/** A memory store declaring `declared`, with `members` added. */
function storeWith(declared: StoreSupports, members: Record<string, unknown> = {}): RecordStore {
  const store = new MemoryStore({ backend: new MemoryBackend(), cluster: 'test' });
  return Object.assign(Object.create(store) as RecordStore, { supports: declared }, members);
}

describe('a store\'s supports manifest', () => {
  it('core reads only what is declared: a member present but undeclared is not used', () => {
    const readiness = { podUid: undefined, assertServed: async () => {}, watchRole: () => ({ listed: Promise.resolve(), close() {} }) };
    expect(podReadinessOf(storeWith({}, { podReadiness: readiness }))).toBeUndefined();
    expect(podReadinessOf(storeWith({ podReadiness: true }, { podReadiness: readiness }))).toBe(readiness);
    const listing = { listPodMembers: async () => ({ records: [], corrupt: [], revision: '0' }) };
    expect(podMemberListingOf(storeWith({ podMemberListing: false }, { podMembers: listing }))).toBeUndefined();
    expect(podMemberListingOf(storeWith({ podMemberListing: true }, { podMembers: listing }))).toBe(listing);
    const access = { namespace: 'prod', isAllowed: async () => true };
    expect(accessReviewOf(storeWith({ accessReview: true }, { access }))).toBe(access);
    expect(supports(storeWith({ holdCheck: true }, { assertCanHold: async () => {} }), 'holdCheck')).toBe(true);
  });

  it('a capability declared without its member is the backend\'s bug, named at once', () => {
    expect(() => podReadinessOf(storeWith({ podReadiness: true }))).toThrow('the memory store declares supports.podReadiness but has no podReadiness (object)');
    expect(() => supports(storeWith({ sessionState: true }), 'sessionState')).toThrow(/supports\.sessionState but has no onSessionState \(function\)/);
  });

  it('the memory store declares the synced progress it sends and its ordered creation, and nothing optional', () => {
    const store = new MemoryStore({ backend: new MemoryBackend(), cluster: 'test' });
    expect(store.supports).toEqual({ syncedProgress: true, orderedCreation: true });
    // A behaviour: declared, it needs no member.
    expect(supports(store, 'orderedCreation')).toBe(true);
  });
});
