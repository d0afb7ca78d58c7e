import { describe, expect, it } from 'vitest';
import { readTestEnv } from '@rollcall/tools/testenv';

describe('private instance', () => {
  it('reaches the test workers: the env file is the private one, with its own ports', () => {
    const env = readTestEnv();
    expect(env.root).toBe('/tmp/rollcall-testenv-selftest');
    expect(env.etcd?.endpoints).toEqual(['http://127.0.0.1:25379']);
  });
});
