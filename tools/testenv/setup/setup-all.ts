import { createGlobalSetup } from './global-setup-factory.js';

/** Vitest global setup that brings up Every server. */
export default createGlobalSetup([]);
