import { createGlobalSetup } from './global-setup-factory.js';

/** Vitest global setup that brings up MariaDB. */
export default createGlobalSetup(['mariadb']);
