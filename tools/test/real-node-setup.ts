export { default } from '../testenv/setup-real-node.js';
