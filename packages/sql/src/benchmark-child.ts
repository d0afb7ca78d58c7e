// The crash-failover benchmark's leader: connects with the configuration sent over IPC, campaigns, and waits to be killed.
import { type ConfigSource, createRegistry } from '@rollcall/core';

process.once('message', (message: { config: ConfigSource }) => {
  createRegistry(message.config).then(
    (registry) => {
      process.send!({ type: 'ready' });
      const leadership = registry.campaign('bench');
      leadership.once('elected', () => process.send!({ type: 'elected' }));
    },
    (err: Error) => {
      process.send!({ type: 'error', error: err.message });
      process.exit(1);
    },
  );
});
