export { sqlDesignConformance, type SqlDesignConformanceOptions } from './sql-design-conformance.js';
export { sqlServerConformance, type SqlServerConformanceOptions } from './sql-server-conformance.js';
export { sqlConnectConformance, type SqlConnectConformanceOptions } from './sql-connect-conformance.js';
