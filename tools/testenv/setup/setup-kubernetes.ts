import { backendSetup } from './global-setup-factory.js';
import { kubernetesBackend } from '../servers/kubernetes.js';

/** Vitest global setup that brings up the control plane. */
export default backendSetup(kubernetesBackend);
