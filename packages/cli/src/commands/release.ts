import { createInterface } from 'node:readline';
import { StoreConflictError } from '@rollcall/core';
import { assertName, registryStore } from '@rollcall/core/admin';
import { formatMicroTime, lockKey, type RecordKey, type RecordStore, type StoredRecord } from '@rollcall/core/spi';
import type { ConfigFlags } from '../config.js';
import { withRegistry } from '../connect.js';
import { CliError, ExitCode } from '../errors.js';
import { age, outputFormat, printJson, since } from '../output.js';
import { printable } from '../terminal.js';

export interface ReleaseFlags extends ConfigFlags {
  yes?: boolean;
  output?: string;
  json?: boolean;
}

/** Asks on stderr, reads one line from stdin; a closed stdin is a no. */
async function confirm(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: process.stdin.isTTY === true });
  return new Promise((resolve) => {
    let answered = false;
    rl.on('close', () => answered || resolve(false));
    rl.question(question, (answer) => {
      answered = true;
      rl.close();
      resolve(/^(y|yes)$/i.test(answer.trim()));
    });
  });
}

/** How often a release re-reads a lock whose holder renewed between the read and the write. */
const RELEASE_ATTEMPTS = 5;

/**
 * Writes the release at the version last read. The holder keeps renewing while
 * the operator reads the prompt, so a changed version alone is no reason to
 * give up: what was agreed to is breaking this holder's token, and that holds
 * while the holder and the token are the same. A lock that changed hands is
 * left alone (CONFLICT): nobody agreed to break the new holder's token.
 */
async function releaseAsAgreed(store: RecordStore, key: RecordKey, name: string, agreed: StoredRecord, backend: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const current = await store.get(key);
    const same = current && current.record.holderIdentity === agreed.record.holderIdentity && current.record.leaseTransitions === agreed.record.leaseTransitions;
    if (!same) {
      const state = !current ? 'was deleted' : current.record.holderIdentity ? `is held by ${current.record.holderIdentity} with fencing token ${current.record.leaseTransitions}` : 'is free';
      throw new StoreConflictError('CONFLICT', `lock ${name} changed hands meanwhile: it ${state}, not held by ${agreed.record.holderIdentity} with fencing token ${agreed.record.leaseTransitions}; nothing was released`, { backend });
    }
    const now = formatMicroTime(new Date());
    try {
      await store.update(key, { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now, leaseTransitions: current.record.leaseTransitions }, current.version);
      return;
    } catch (error) {
      if (!(error instanceof StoreConflictError) || error.code !== 'CONFLICT' || attempt >= RELEASE_ATTEMPTS) throw error;
    }
  }
}

/**
 * `rollcall release <lock>`: frees a lock whatever its holder, with the
 * compare-and-set core's own release writes (empty holder, one-second lease,
 * the transition counter kept), so the next holder's token is still larger.
 * The holder, if alive, sees its record taken and its lock's signal aborts.
 *
 * It looks before it writes: the lock is read, and asked about, through a
 * read-only registry, which creates nothing on any backend (no sqlite file,
 * no schema, no cluster znode), so a wrong path or cluster is NOT_FOUND and
 * leaves nothing behind. Only a lock that exists is then written, through a
 * registry that may write: its store exists already.
 */
export async function releaseCommand(name: string, flags: ReleaseFlags): Promise<void> {
  const format = outputFormat(flags);
  assertName('lock', name);
  const key = lockKey(name);
  const agreed = await withRegistry(flags, 'read', async (registry, config) => {
    const stored = await registryStore(registry).get(key);
    if (!stored) throw new StoreConflictError('NOT_FOUND', `no lock ${name} in cluster ${config.resolved.cluster}`, { backend: registry.backend });
    const { record } = stored;
    if (record.holderIdentity !== '' && !flags.yes) {
      const prompt = `Force-release lock ${name} held by ${printable(record.holderIdentity)} (fencing token ${record.leaseTransitions}, renewed ${age(since(record.renewTime))} ago)? The holder loses it at once. [y/N] `;
      if (!(await confirm(prompt))) throw new CliError('DECLINED', `lock ${name} was not released`, ExitCode.DECLINED, 'answer y, or pass --yes to release without asking');
    }
    return stored;
  });
  const { record } = agreed;
  if (record.holderIdentity === '') {
    if (format === 'json') printJson({ lock: name, released: false, alreadyFree: true, fencingToken: record.leaseTransitions });
    else process.stdout.write(`lock ${name} is already free (last fencing token ${record.leaseTransitions})\n`);
    return;
  }
  // An operator's write past the algorithms, so through the store itself.
  await withRegistry(flags, 'write', (registry) => releaseAsAgreed(registryStore(registry), key, name, agreed, registry.backend));
  process.stderr.write(printable(`rollcall: released lock ${name}: broke fencing token ${record.leaseTransitions} held by ${record.holderIdentity}`) + '\n');
  if (format === 'json') printJson({ lock: name, released: true, brokeFencingToken: record.leaseTransitions, previousHolder: record.holderIdentity });
  else process.stdout.write(printable(`released lock ${name} (fencing token ${record.leaseTransitions}, held by ${record.holderIdentity}); the next holder gets a larger token`) + '\n');
}
