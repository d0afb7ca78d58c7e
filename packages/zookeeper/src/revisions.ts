import { randomBytes } from 'node:crypto';
import type { RecordKey } from '@rollcall/core/spi';

/** What a consumer at some revision has been told: the version of every key under `prefix`. */
export interface Snapshot {
  prefix: string;
  versions: Map<RecordKey, string>;
}

/** One state in the journal: a full snapshot, or a change on top of its parent. */
interface Node {
  prefix: string;
  base?: Map<RecordKey, string>;
  parent?: Node;
  key?: RecordKey;
  /** The version after the change; null for a delete. */
  version?: string | null;
  depth: number;
}

/**
 * ZooKeeper cannot replay changes from a zxid, so a revision here names a
 * state this store itself handed out: a list's snapshot, or that snapshot plus
 * the events a watch delivered up to it. A watch resumed from it re-reads the
 * cluster and emits the difference to that state, which is complete by
 * construction. A revision this store instance did not issue, or has
 * forgotten, cannot be proven complete: the watch ends with REVISION_TOO_OLD
 * and core relists.
 *
 * Tokens read `<zxid, 16 hex>-<store instance>-<sequence>`: the highest zxid
 * the state reflects, so tokens order like the ensemble's history, made unique
 * per delivered state.
 */
export class RevisionJournal {
  private readonly instance = randomBytes(4).toString('hex');
  private seq = 0;
  private readonly nodes = new Map<string, Node>();

  /**
   * @param capacity revisions kept, oldest forgotten first.
   * @param maxDepth changes chained before a state is stored whole again, bounding a resume's replay.
   */
  constructor(
    private readonly capacity = 10_000,
    private readonly maxDepth = 512,
  ) {}

  /** Registers a full snapshot; returns its token and journal position. */
  root(prefix: string, versions: Map<RecordKey, string>, zxid: bigint): { token: string; position: Node } {
    return this.register({ prefix, base: new Map(versions), depth: 0 }, zxid);
  }

  /** Registers `position` plus one change (`version` null: deleted). */
  next(position: Node, key: RecordKey, version: string | null, zxid: bigint): { token: string; position: Node } {
    if (position.depth >= this.maxDepth) {
      const versions = this.materialize(position);
      if (version === null) versions.delete(key);
      else versions.set(key, version);
      return this.register({ prefix: position.prefix, base: versions, depth: 0 }, zxid);
    }
    return this.register({ prefix: position.prefix, parent: position, key, version, depth: position.depth + 1 }, zxid);
  }

  /** The state a token names, as a fresh map, with its position for further changes; undefined when unknown. */
  resolve(token: string): { snapshot: Snapshot; position: Node } | undefined {
    const position = this.nodes.get(token);
    if (!position) return undefined;
    // Refresh: a revision in use stays longest.
    this.nodes.delete(token);
    this.nodes.set(token, position);
    return { snapshot: { prefix: position.prefix, versions: this.materialize(position) }, position };
  }

  private materialize(position: Node): Map<RecordKey, string> {
    const chain: Node[] = [];
    let node: Node | undefined = position;
    while (node && !node.base) {
      chain.push(node);
      node = node.parent;
    }
    const versions = new Map(node!.base);
    for (let i = chain.length - 1; i >= 0; i--) {
      const change = chain[i]!;
      if (change.version === null) versions.delete(change.key!);
      else versions.set(change.key!, change.version!);
    }
    return versions;
  }

  private register(node: Node, zxid: bigint): { token: string; position: Node } {
    const token = `${zxid.toString(16).padStart(16, '0')}-${this.instance}-${(++this.seq).toString(36)}`;
    this.nodes.set(token, node);
    while (this.nodes.size > this.capacity) this.nodes.delete(this.nodes.keys().next().value!);
    return { token, position: node };
  }
}

export type JournalPosition = NonNullable<ReturnType<RevisionJournal['resolve']>>['position'];

/** A zxid Buffer (8 bytes, big-endian) as a bigint. */
export function zxidOf(buffer: Buffer | undefined): bigint {
  return buffer && buffer.length === 8 ? buffer.readBigUInt64BE(0) : 0n;
}

/** A record's creation (`StoredRecord.created`): its czxid, in decimal, so creates compare as integers across the ensemble. */
export function createdOf(czxid: Buffer): string {
  return zxidOf(czxid).toString(10);
}

/** A record's version: the zxid of its last write (mzxid), unique across the ensemble's history, so never repeated by a delete and re-create. */
export function versionOf(mzxid: Buffer): string {
  return zxidOf(mzxid).toString(16).padStart(16, '0');
}
