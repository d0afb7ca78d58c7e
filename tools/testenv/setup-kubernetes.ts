import { createGlobalSetup } from './global-setup-factory.js';

/** Vitest global setup that brings up The Kubernetes control plane with kwok. */
export default createGlobalSetup(['kubernetes']);
