import { describe, expect, it } from 'vitest';
import { objectName } from '../src/index.js';

const DNS1123 = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

describe('object names', () => {
  it('keeps a simple election or lock key readable', () => {
    expect(objectName('orders', 'election/scheduler')).toBe('orders-election-scheduler');
    expect(objectName('orders', 'lock/nightly-report')).toBe('orders-lock-nightly-report');
  });

  it('hashes long, mixed-case and member keys into valid names of at most 63 characters, never cutting them into one another', () => {
    const keys = [
      `election/${'very-long-election-name-'.repeat(5)}a`,
      `election/${'very-long-election-name-'.repeat(5)}b`,
      'election/Scheduler',
      'election/scheduler_',
      'election/scheduler.1',
      'member/a-b/c',
      'member/a/b-c',
      'member/worker/10.0.0.1:5678',
      `member/${'r'.repeat(128)}/${'i'.repeat(253)}`,
    ];
    const names = keys.map((k) => objectName('orders', k));
    for (const name of names) {
      expect(name.length).toBeLessThanOrEqual(63);
      expect(name).toMatch(DNS1123);
    }
    expect(new Set(names).size).toBe(keys.length);
    expect(names[0]).toMatch(/^orders-election-very-long-election-name-.*-[0-9a-f]{10}$/);
  });

  it('separates clusters', () => {
    expect(objectName('a', 'member/w/1')).not.toBe(objectName('b', 'member/w/1'));
  });
});
