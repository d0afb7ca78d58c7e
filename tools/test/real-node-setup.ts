export { default } from '../testenv/setup/setup-real-node.js';
