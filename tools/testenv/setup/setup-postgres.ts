import { backendSetup } from './global-setup-factory.js';
import { postgresBackend } from '../servers/postgres.js';

/** Vitest global setup that brings up PostgreSQL. */
export default backendSetup(postgresBackend);
