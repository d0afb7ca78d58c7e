import { randomBytes } from 'node:crypto';

/**
 * A fresh cluster name per case, so cases never see each other's records even
 * on a backend that outlives the run. A DNS-1123 label, as clusters must be.
 */
export function uniqueCluster(purpose: string): string {
  return `conf-${purpose}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`.slice(0, 63).replace(/-+$/, '');
}
