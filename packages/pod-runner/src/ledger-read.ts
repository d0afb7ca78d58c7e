import { hasCode } from '@rollcall/core';
import type { ApiClient } from '@rollcall/kube-client';
import { decodeLedger, ledgerName, type LedgerEntry } from './ledger-format.js';

/**
 * A runner's task ledger read once, for tools (`rollcall tasks list`): a GET
 * and nothing else — a ledger that does not exist is empty, never created.
 * Parsed by the runner's own decoder, so SCHEMA_MISMATCH for a newer runner's
 * ledger and CORRUPT_RECORD for garbage, as the runner would say.
 */
export async function readLedger(client: ApiClient, namespace: string, runner: string): Promise<Map<string, LedgerEntry>> {
  const name = ledgerName(runner);
  try {
    const map = await client.request<{ data?: Record<string, string> }>({ method: 'GET', path: `/api/v1/namespaces/${namespace}/configmaps/${name}`, context: { verb: 'get', resource: 'configmaps', namespace, name } });
    return decodeLedger(map.data, name);
  } catch (err) {
    if (hasCode(err, 'NOT_FOUND')) return new Map();
    throw err;
  }
}
