import { registryConformance } from '../src/index.js';
import { memoryRegistry } from './memory-backend.js';

// The whole Registry API contract again, with member liveness judged by one elected reaper per role.
registryConformance({ name: 'memory (reaper liveness)', liveness: 'reaper', ...memoryRegistry });
