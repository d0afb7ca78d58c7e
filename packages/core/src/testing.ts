/** Test helpers: `import { ManualClock } from '@rollcall/core/testing'`. */
export { ManualClock, settle } from './manual-clock.js';
