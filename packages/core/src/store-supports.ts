import { InvalidArgumentError } from './errors.js';
import type { RecordStore, StoreSupports } from './store.js';

/** Capabilities that are behaviours, with no member to check. */
type Behaviour = 'syncedProgress' | 'orderedCreation';
const BEHAVIOURS: ReadonlySet<keyof StoreSupports> = new Set<Behaviour>(['syncedProgress', 'orderedCreation']);

/** The member each capability of {@link StoreSupports} promises, and its kind; `syncedProgress` and `orderedCreation` are behaviours, with none. */
const MEMBERS: Readonly<Record<Exclude<keyof StoreSupports, Behaviour>, { member: string; kind: 'function' | 'object' }>> = {
  holdCheck: { member: 'assertCanHold', kind: 'function' },
  sessionState: { member: 'onSessionState', kind: 'function' },
  podReadiness: { member: 'podReadiness', kind: 'object' },
  podMemberListing: { member: 'podMembers', kind: 'object' },
  accessReview: { member: 'access', kind: 'object' },
};

/**
 * Whether `store` declares `capability`. A declared capability whose member is
 * missing is the backend's bug, named at once (INVALID_ARGUMENT) rather than
 * found when the member is first called; the conformance suite checks the
 * other direction (a member the manifest does not declare).
 */
export function supports(store: RecordStore, capability: keyof StoreSupports): boolean {
  if (store.supports?.[capability] !== true) return false;
  if (BEHAVIOURS.has(capability)) return true;
  const { member, kind } = MEMBERS[capability as Exclude<keyof StoreSupports, Behaviour>];
  const value = (store as unknown as Record<string, unknown>)[member];
  if (kind === 'function' ? typeof value !== 'function' : typeof value !== 'object' || value === null) {
    throw new InvalidArgumentError(`the ${store.backend} store declares supports.${capability} but has no ${member} (${kind})`, { backend: store.backend });
  }
  return true;
}

/** The optional members of {@link RecordStore} as the manifest names them: `[capability, member]`, for a check that none is present undeclared. */
export const SUPPORTED_MEMBERS: readonly (readonly [keyof StoreSupports, string])[] = Object.entries(MEMBERS).map(([capability, { member }]) => [capability as keyof StoreSupports, member] as const);
