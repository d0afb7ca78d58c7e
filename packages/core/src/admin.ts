/**
 * `@rollcall/core/admin`: for what runs registries rather than backs them — the
 * CLI, `@rollcall/migrate`, backend tests and the conformance suite: loading and
 * naming plugins (and composing one over others), the store a registry runs on,
 * and the rules names are checked by. Not the SPI: a backend needs none of it.
 */
export { loadConfiguredPlugin, loadPlugin, missingPackage, PLUGIN_PACKAGES, type PluginComposeContext, type PluginLoader } from './plugin.js';
export { installLine } from './install-line.js';
export { announcedAlive, registryStore } from './registry.js';
export { assertIdentity, assertName, CLUSTER_RULE, IDENTITY_RULE, NAME_RULE } from './names.js';
// What a store declares it supports, read as core reads it (the conformance suite, rollcall doctor).
export { supports, SUPPORTED_MEMBERS } from './store-supports.js';
export { accessReviewOf } from './access-review.js';
export { resolvePluginOptions } from './config/plugin-options.js';
