import { handEditCases } from './sql-design/hand-edit-cases.js';
import { legacyRowCases } from './sql-design/legacy-row-cases.js';
import { createSqlDesignHarness, type SqlDesignConformanceOptions } from './sql-design/harness.js';
import { pollerCases } from './sql-design/poller-cases.js';
import { purgeCases } from './sql-design/purge-cases.js';
import { readOnlyCases } from './sql-design/read-only-cases.js';
import { revisionCases } from './sql-design/revision-cases.js';
import { schemaCases } from './sql-design/schema-cases.js';

export type { SqlDesignConformanceOptions } from './sql-design/harness.js';

/**
 * The cases of `@rollcall/sql`'s design itself — schema creation and detection,
 * the revision counter, the change table, its poller and purge, rows edited by
 * hand, rows of the release before incarnations — beyond the SPI that `storeConformance` proves. Every SQL backend
 * (`@rollcall/mysql`, `@rollcall/sqlite`) runs them on its real database. Call
 * it at the top level of a vitest file.
 */
export function sqlDesignConformance(options: SqlDesignConformanceOptions): void {
  const h = createSqlDesignHarness(options);
  schemaCases(h);
  revisionCases(h);
  pollerCases(h);
  purgeCases(h);
  readOnlyCases(h);
  handEditCases(h);
  legacyRowCases(h);
}
