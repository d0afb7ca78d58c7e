import { join } from 'node:path';
import { port } from '../../ports.js';
import { unitDir } from '../../paths.js';

/** The API server's URL. */
export const apiServerUrl = () => `https://127.0.0.1:${port('kubeApiserver')}`;

/** JSON-lines audit log (one audit.k8s.io/v1 Event per line). */
export const auditLogPath = () => join(unitDir('kubernetes'), 'audit', 'audit.log');

/** Namespaces created for tests by `up`. */
export const TEST_NAMESPACES = ['rollcall-test'];

/** kwok-managed fake nodes created by `up`. */
export const FAKE_NODES = ['kwok-node-0'];

/** Annotation kwok is told to manage nodes by (only our fake nodes). */
export const KWOK_NODE_ANNOTATION = { key: 'kwok.x-k8s.io/node', value: 'fake' };

/** The in-cluster service range; nothing binds these addresses. */
export const SERVICE_CIDR = '10.96.0.0/16';
export const SERVICE_ACCOUNT_ISSUER = 'https://kubernetes.default.svc.cluster.local';
