import { createGlobalSetup } from './global-setup-factory.js';

/** Vitest global setup that brings up PostgreSQL. */
export default createGlobalSetup(['postgres']);
