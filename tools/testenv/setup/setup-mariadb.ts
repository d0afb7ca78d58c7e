import { backendSetup } from './global-setup-factory.js';
import { mariadbBackend } from '../servers/mariadb.js';

/** Vitest global setup that brings up MariaDB. */
export default backendSetup(mariadbBackend);
