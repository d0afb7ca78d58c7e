import type { Logger } from '@rollcall/core';
import type { CorruptEntry, RecordKey, StoredRecord } from '@rollcall/core/spi';
import { BACKEND } from '@rollcall/kube-client';
import type { KubeObject, ResourceCodec } from './codec.js';

/** How many shadow objects are remembered as reported, so each is logged once; beyond it the oldest is forgotten. */
const REMEMBERED = 1000;

/**
 * A record is the object its key names: the name `objectName(cluster, key)`
 * gives, of the resource its kind is kept as. Anyone who may create Leases can
 * create another object carrying the same key annotation and labels — a shadow
 * — and were it read, readers would see a fake holder or member, or the key
 * flip between two objects. A shadow is no record: it is logged once (a
 * warning naming both objects) and skipped, and never touches the real one —
 * not even as a corrupt entry, which would hide the real record.
 */
export class ShadowObjects {
  private readonly reported = new Set<string>();

  constructor(
    private readonly logger: Logger,
    /** The object name a key is stored under. */
    private readonly nameOf: (key: RecordKey) => string,
    /** The resource a key is stored as. */
    private readonly codecOf: (key: RecordKey) => ResourceCodec,
  ) {}

  /** `object` decoded by `codec`, or undefined when it is no record or a shadow. */
  decode(codec: ResourceCodec, object: KubeObject): StoredRecord | CorruptEntry | undefined {
    const decoded = codec.decode(object);
    if (!decoded) return undefined;
    const expected = this.nameOf(decoded.key);
    const resource = this.codecOf(decoded.key).resource;
    if (object.metadata.name === expected && codec.resource === resource) return decoded;
    this.report(object, codec, decoded.key, `${resource} ${expected}`);
    return undefined;
  }

  private report(object: KubeObject, codec: ResourceCodec, key: RecordKey, owner: string): void {
    const id = object.metadata.uid ?? `${codec.resource}/${object.metadata.name}`;
    if (this.reported.has(id)) return;
    if (this.reported.size >= REMEMBERED) this.reported.delete(this.reported.values().next().value!);
    this.reported.add(id);
    this.logger.warn(
      { backend: BACKEND, key, shadow: `${codec.resource} ${object.metadata.name}`, owner },
      `[rollcall] [kubernetes] ignored ${codec.resource} ${object.metadata.name}: it claims the key ${key}, which is the object ${owner} (a shadow object: someone else created it)`,
    );
  }
}
