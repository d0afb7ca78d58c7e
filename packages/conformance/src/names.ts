import { randomBytes } from 'node:crypto';

/**
 * A fresh cluster name per case, `<purpose>-<time>-<random>`, so cases never see
 * each other's records even on a server that outlives the run. A DNS-1123 label
 * of at most 63 characters, as clusters must be: a long `purpose` is shortened,
 * never the unique tail.
 */
export function uniqueCluster(purpose: string): string {
  const tail = `${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
  const head = purpose.slice(0, 63 - tail.length - 1).replace(/-+$/, '');
  return head ? `${head}-${tail}` : tail;
}
