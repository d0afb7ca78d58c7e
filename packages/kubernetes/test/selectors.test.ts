import { describe, expect, it } from 'vitest';
import { prefixSelector, recordLabels } from '../src/selectors.js';

const cluster = 'orders';
const LONG_ROLE = 'r'.repeat(64);

describe('the label selector of a key prefix', () => {
  it('selects each prefix shape by the labels its records carry', () => {
    expect(prefixSelector(cluster, '')).toBe('rollcall.dev/cluster=orders');
    expect(prefixSelector(cluster, 'member/')).toBe('rollcall.dev/cluster=orders,rollcall.dev/kind=member');
    expect(prefixSelector(cluster, 'member/worker/')).toBe('rollcall.dev/cluster=orders,rollcall.dev/kind=member,rollcall.dev/role=worker');
    expect(prefixSelector(cluster, 'member/worker/10.0.0.1:80')).toBe('rollcall.dev/cluster=orders,rollcall.dev/kind=member,rollcall.dev/role=worker');
    expect(prefixSelector(cluster, 'election/')).toBe('rollcall.dev/cluster=orders,rollcall.dev/kind=election');
    expect(prefixSelector(cluster, 'lock/')).toBe('rollcall.dev/cluster=orders,rollcall.dev/kind=lock');
    expect(prefixSelector(cluster, 'heartbeat/')).toBe('rollcall.dev/cluster=orders,rollcall.dev/kind=heartbeat');
    expect(prefixSelector(cluster, 'heartbeat/worker/')).toBe('rollcall.dev/cluster=orders,rollcall.dev/kind=heartbeat,rollcall.dev/role=worker');
  });

  it("a member's heartbeat record has its own kind, which a selector of the role's members leaves out", () => {
    expect(recordLabels(cluster, 'heartbeat/worker/w1')).toEqual({ 'rollcall.dev/cluster': 'orders', 'rollcall.dev/kind': 'heartbeat', 'rollcall.dev/role': 'worker' });
    expect(prefixSelector(cluster, 'member/worker/')).toContain('rollcall.dev/kind=member');
  });

  it('a whole election or lock key is selected with its kind, as keys that extend it are under it too', () => {
    expect(prefixSelector(cluster, 'election/scheduler')).toBe('rollcall.dev/cluster=orders,rollcall.dev/kind=election');
    expect(prefixSelector(cluster, 'lock/Nightly_Report')).toBe('rollcall.dev/cluster=orders,rollcall.dev/kind=lock');
  });

  it('a role that cannot be a label value is selected by its kind, as its records carry no role label', () => {
    expect(recordLabels(cluster, `member/${LONG_ROLE}/a`)).toEqual({ 'rollcall.dev/cluster': 'orders', 'rollcall.dev/kind': 'member' });
    expect(prefixSelector(cluster, `member/${LONG_ROLE}/`)).toBe('rollcall.dev/cluster=orders,rollcall.dev/kind=member');
    expect(prefixSelector(cluster, 'member/wör ker/')).toBe('rollcall.dev/cluster=orders,rollcall.dev/kind=member');
  });

  it('a prefix that does not name a whole kind or role is selected by what it surely names', () => {
    expect(prefixSelector(cluster, 'member/work')).toBe('rollcall.dev/cluster=orders,rollcall.dev/kind=member');
    expect(prefixSelector(cluster, 'election')).toBe('rollcall.dev/cluster=orders');
    expect(prefixSelector(cluster, 'mem')).toBe('rollcall.dev/cluster=orders');
  });

  it('selects every record under the prefix: a record carries every label its prefixes select by', () => {
    const keys = ['member/worker/w1', 'heartbeat/worker/w1', `heartbeat/${LONG_ROLE}/w1`, 'member/workers/w1', `member/${LONG_ROLE}/w1`, 'election/e1', 'election/e10', 'lock/l1', 'lock/member', 'member/worker/a/b', 'member/w'];
    for (const key of keys) {
      const labels = recordLabels(cluster, key);
      for (let end = 0; end <= key.length; end++) {
        const prefix = key.slice(0, end);
        for (const term of prefixSelector(cluster, prefix).split(',')) {
          const [label, value] = term.split('=') as [string, string];
          expect(labels[label], `${key} under ${JSON.stringify(prefix)}`).toBe(value);
        }
      }
    }
  });
});
