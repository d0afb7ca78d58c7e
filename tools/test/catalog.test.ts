import { describe, expect, it } from 'vitest';
import { BACKENDS, SERVER_EXECUTABLES, SERVER_NAMES, assertDistinctPorts } from '../testenv/catalog.js';
import { defineBackend } from '../testenv/servers/server.js';

describe('the backend catalog', () => {
  it('refuses two backends that claim one port offset, naming both', () => {
    const a = defineBackend({ name: 'a', servers: [], portOffsets: [100, 101], executables: [] });
    const b = defineBackend({ name: 'b', servers: [], portOffsets: [101], executables: [] });
    expect(() => assertDistinctPorts([a, b])).toThrow('port offset 101 is claimed by both a and b');
    expect(() => assertDistinctPorts(BACKENDS)).not.toThrow();
  });

  it('offers every server of every descriptor, each name once', () => {
    expect(new Set(SERVER_NAMES).size).toBe(SERVER_NAMES.length);
    // the servers the suites rely on are all there; a new backend's descriptor adds to them without editing this test
    expect(SERVER_NAMES).toEqual(expect.arrayContaining(['zookeeper', 'zookeeper-ensemble', 'mariadb', 'postgres', 'etcd', 'etcd-auth', 'kubernetes']));
    expect(SERVER_EXECUTABLES.has('mariadbd')).toBe(true);
    expect(SERVER_EXECUTABLES.has('sh')).toBe(false);
  });

  it("gives each backend a global setup, @rollcall/tools/testenv/setup-<name>", async () => {
    for (const backend of BACKENDS) {
      const setup = (await import(`@rollcall/tools/testenv/setup-${backend.name}`)) as { default: unknown };
      expect(typeof setup.default, backend.name).toBe('function');
    }
  });
});
