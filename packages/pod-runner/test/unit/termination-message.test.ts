import { describe, expect, it } from 'vitest';
import { parseResult, readPod, terminationMessageLimit } from '../../src/pod-status.js';
import { at, pod } from './fixtures.js';

/** A pod whose task container `main` exited 0 with `message`, beside `others` more containers. */
function exited(message: string, others = 0) {
  const p = pod({ phase: 'Succeeded', containerStatuses: [{ name: 'main', state: { terminated: { exitCode: 0, reason: 'Completed', message, finishedAt: at(5000) } } }] });
  p.spec.initContainers = Array.from({ length: others }, (_, i) => ({ name: `init-${i}` }));
  return p;
}
const json = (bytes: number) => JSON.stringify({ pad: 'x'.repeat(bytes - JSON.stringify({ pad: '' }).length) });

describe('the termination message limit', () => {
  it('is the kubelet\'s 4096 bytes up to three containers, then 12288 shared out', () => {
    expect(terminationMessageLimit(exited(''))).toBe(4096);
    expect(terminationMessageLimit(exited('', 2))).toBe(4096);
    expect(terminationMessageLimit(exited('', 3))).toBe(3072);
    const ephemeral = exited('', 3);
    ephemeral.spec.ephemeralContainers = [{ name: 'debug' }];
    expect(terminationMessageLimit(ephemeral)).toBe(2457);
  });

  it('parses a message below the limit and never one that reached it, which the kubelet may have cut', () => {
    expect(readPod(exited(json(4095)))).toMatchObject({ phase: 'succeeded', result: { pad: expect.any(String) } });
    const atLimit = readPod(exited(json(4096)));
    expect(atLimit).toMatchObject({ phase: 'succeeded', terminationMessage: json(4096) });
    expect(atLimit).not.toHaveProperty('result', expect.anything());
    // the head of a long number still parses: the reason for the rule
    expect(parseResult('1'.repeat(3072))).toBeTypeOf('number');
    expect(readPod(exited('1'.repeat(3072), 3))).not.toHaveProperty('result', expect.anything());
    expect(readPod(exited(json(3071), 3))).toMatchObject({ result: { pad: expect.any(String) } });
  });

  it('counts bytes, not characters', () => {
    const wide = JSON.stringify('é'.repeat(2047)); // 2 + 2047 × 2 = 4096 bytes, 2049 characters
    expect(readPod(exited(wide))).not.toHaveProperty('result', expect.anything());
    expect(readPod(exited(JSON.stringify('é'.repeat(2046))))).toMatchObject({ result: 'é'.repeat(2046) });
  });
});
