import { describe } from 'vitest';
import { compareAndSetCases } from './store/compare-and-set-cases.js';
import { createCases } from './store/create-cases.js';
import { creationOrderCases } from './store/creation-order-cases.js';
import { createStoreHarness, type StoreConformanceOptions } from './store/harness.js';
import { hostileRecordCases } from './store/hostile-record-cases.js';
import { isolationCases } from './store/isolation-cases.js';
import { listCases } from './store/list-cases.js';
import { partitionCases } from './store/partition-cases.js';
import { payloadCases } from './store/payload-cases.js';
import { watchCases } from './store/watch-cases.js';

export type { StoreConformanceOptions } from './store/harness.js';

/**
 * Registers the record-store cases: the backend SPI's contract, tested on the
 * store directly. Call it at the top level of a vitest file.
 */
export function storeConformance(options: StoreConformanceOptions): void {
  describe(`${options.name}: record store (SPI v1)`, () => {
    const h = createStoreHarness(options);
    createCases(h);
    compareAndSetCases(h);
    creationOrderCases(h);
    listCases(h);
    watchCases(h);
    isolationCases(h);
    payloadCases(h);
    partitionCases(h);
    hostileRecordCases(h);
  });
}
