import { describe, expect, it } from 'vitest';
import { DEFAULT_MEMBER_TIMING } from '@rollcall/core';
import { UsageError } from '../bench/args.js';
import { latency, requestRates, seenByEvery, watchRates, writesPerHeartbeat } from '../bench/scale/aggregate.js';
import { parseScaleArgs, SCALE_DEFAULTS } from '../bench/scale/args.js';
import { planCluster } from '../bench/scale/plan.js';
import { coresBetween, parseCpuTicks, parseParentPid, parseRssBytes, processTree, sampleProcess } from '../bench/scale/proc.js';
import { memberFields, seriesName, type ScaleRow } from '../bench/scale/results.js';
import { isMemberWrite } from '../bench/scale/server.js';
import { latencyCell, renderScaleNotes, renderScaleTable, SCALE_COLUMNS } from '../bench/scale/table.js';

describe('bench:scale arguments', () => {
  it('takes the issue’s command line, sorts the sizes, and defaults the rest', () => {
    const options = parseScaleArgs(['--backend', 'zookeeper,kubernetes', '--members', '1000,100,300', '--elections', '100', '--seconds', '30', '--json', 'out.json']);
    expect(options).toEqual({ ...SCALE_DEFAULTS, backends: ['kubernetes', 'zookeeper'], members: [100, 300, 1000], elections: 100, seconds: 30, json: 'out.json' });
    expect(parseScaleArgs(['--render', 'out.json'])).toEqual({ render: 'out.json' });
    expect(parseScaleArgs(['--help'])).toBe('help');
    expect(parseScaleArgs(['--liveness', 'reaper'])).toEqual({ ...SCALE_DEFAULTS, liveness: ['reaper'] });
    expect(parseScaleArgs(['--liveness', 'reaper,heartbeat'])).toEqual({ ...SCALE_DEFAULTS, liveness: ['heartbeat', 'reaper'] });
    expect(SCALE_DEFAULTS.liveness).toEqual(['heartbeat']);
    // pod mode beside the others, in one run on Kubernetes
    expect(parseScaleArgs(['--liveness', 'pod,reaper,heartbeat'])).toEqual({ ...SCALE_DEFAULTS, liveness: ['heartbeat', 'reaper', 'pod'] });
    // N = 0: the elections-only baseline, beside the sizes
    expect(parseScaleArgs(['--members', '1000,0', '--liveness', 'pod'])).toEqual({ ...SCALE_DEFAULTS, members: [0, 1000], liveness: ['pod'] });
    expect(parseScaleArgs(['--members', '0'])).toEqual({ ...SCALE_DEFAULTS, members: [0] });
    expect(parseScaleArgs(['--member-timing', '10000/40000, 5000/20000,10000/40000'])).toEqual({
      ...SCALE_DEFAULTS,
      memberTimings: [
        { heartbeatIntervalMs: 10_000, leaseDurationMs: 40_000 },
        { heartbeatIntervalMs: 5_000, leaseDurationMs: 20_000 },
      ],
    });
    expect(SCALE_DEFAULTS.memberTimings).toEqual([{ heartbeatIntervalMs: 5_000, leaseDurationMs: 20_000 }]);
  });

  it('refuses what cannot run, saying why', () => {
    expect(() => parseScaleArgs(['--backend', 'sqlite'])).toThrow(new UsageError('--backend: no backend "sqlite"; the scale benchmark runs kubernetes, etcd, zookeeper'));
    expect(() => parseScaleArgs(['--members', '100,abc'])).toThrow('--members must be a whole number of at least 0, not "abc"');
    expect(() => parseScaleArgs(['--members', '0,100', '--elections', '0'])).toThrow(new UsageError('--members 0 (the elections-only baseline) needs --elections of at least 1'));
    // the baseline is not the smallest size the workers are counted at
    expect(() => parseScaleArgs(['--members', '0,24', '--masters', '10'])).toThrow('--members 24 leaves 2 workers');
    expect(() => parseScaleArgs(['--seconds', '0'])).toThrow('--seconds must be a positive number');
    expect(() => parseScaleArgs(['--members', '24', '--masters', '10'])).toThrow('--members 24 leaves 2 workers beside 10 masters and 12 in crashed processes: at least 3 needed (the candidates of an election)');
    expect(() => parseScaleArgs(['--candidates', '1'])).toThrow('--handovers needs --candidates of at least 2');
    expect(() => parseScaleArgs(['--nodes', '3'])).toThrow(UsageError);
    expect(() => parseScaleArgs(['--liveness', 'pods'])).toThrow(new UsageError('--liveness must be one of heartbeat, reaper, pod, not "pods"'));
    // only the kubernetes plugin reads pod readiness
    expect(() => parseScaleArgs(['--backend', 'kubernetes,etcd,zookeeper', '--liveness', 'heartbeat,pod'])).toThrow(new UsageError('--liveness pod runs on kubernetes only (a kwok pod per member), not etcd, zookeeper'));
    expect(parseScaleArgs(['--backend', 'etcd', '--liveness', 'reaper'])).toMatchObject({ backends: ['etcd'], liveness: ['reaper'] });
    expect(() => parseScaleArgs(['--liveness', ','])).toThrow(new UsageError('--liveness names no mode'));
    expect(() => parseScaleArgs(['--member-timing', '10000'])).toThrow(new UsageError('--member-timing takes heartbeat/lease in ms, e.g. 10000/40000, not "10000"'));
    expect(() => parseScaleArgs(['--member-timing', '10s/40s'])).toThrow(UsageError);
    // the registry's own rule, in its words
    expect(() => parseScaleArgs(['--member-timing', '10000/15000'])).toThrow(/^--member-timing 10000\/15000: .*leaseDurationMs \(15000\) must be at least 2 x heartbeatIntervalMs \(20000\)/);
    expect(() => parseScaleArgs(['--member-timing', ','])).toThrow(new UsageError('--member-timing names no timing'));
  });
});

describe('bench:scale plan', () => {
  it('puts N members in the worker processes round-robin, the crashed ones apart, and each election on distinct workers', () => {
    const plan = planCluster(40, { masters: 4, elections: 10, candidates: 3, processes: 3, crashes: 2, crashMembers: 3 });
    const hosted = plan.processes.flat();
    expect(hosted.length + plan.crashes.flat().length).toBe(40);
    expect(plan.processes.map((p) => p.length)).toEqual([12, 11, 11]);
    expect(plan.crashes.map((c) => c.map((s) => s.id))).toEqual([
      ['crash-0-0', 'crash-0-1', 'crash-0-2'],
      ['crash-1-0', 'crash-1-1', 'crash-1-2'],
    ]);
    // the masters spread over the worker processes
    expect(plan.processes.map((p) => p.filter((s) => s.role === 'master').map((s) => s.id))).toEqual([['master-0', 'master-3'], ['master-1'], ['master-2']]);
    expect(plan.workers).toHaveLength(30);
    for (const election of plan.elections) {
      const candidates = hosted.filter((s) => s.campaigns.includes(election));
      expect(candidates).toHaveLength(3);
      expect(candidates.every((s) => s.role === 'worker')).toBe(true);
    }
    expect(() => planCluster(10, { masters: 4, elections: 1, candidates: 3, processes: 2, crashes: 1, crashMembers: 4 })).toThrow('too few for 3 candidates');
  });

  it('at N = 0 runs only the elections: their candidates, each in one election as at N > 0, no member, no master, no crash', () => {
    const plan = planCluster(0, { masters: 4, elections: 4, candidates: 3, processes: 5, crashes: 2, crashMembers: 3 });
    const hosted = plan.processes.flat();
    expect(hosted).toHaveLength(12);
    expect(plan.processes.map((p) => p.length)).toEqual([3, 3, 2, 2, 2]);
    expect(hosted.every((s) => s.member === false && s.role === 'worker' && s.campaigns.length === 1)).toBe(true);
    expect(new Set(hosted.map((s) => s.id)).size).toBe(12);
    for (const election of plan.elections) expect(hosted.filter((s) => s.campaigns.includes(election))).toHaveLength(3);
    expect(plan).toMatchObject({ crashes: [], masters: [], workers: [], elections: ['election-0', 'election-1', 'election-2', 'election-3'] });
    // at N > 0 every simulated process is a member
    expect(planCluster(40, { masters: 4, elections: 10, candidates: 3, processes: 3, crashes: 2, crashMembers: 3 }).processes.flat().some((s) => s.member === false)).toBe(false);
  });
});

describe('bench:scale /proc readers', () => {
  // a command name with a space and a parenthesis, as /proc/<pid>/stat may hold
  const STAT = '4242 (kube apiserver) S 1 4242 4242 0 -1 4194560 181437 0 31 0 1234 567 0 0 20 0 17 0 7113 1651011584 79321 18446744073709551615';

  it('reads utime + stime and the parent from a stat line, whatever the command name', () => {
    expect(parseCpuTicks(STAT)).toBe(1234 + 567);
    expect(parseParentPid(STAT)).toBe(1);
    expect(() => parseCpuTicks('garbage')).toThrow('not a /proc/<pid>/stat line');
  });

  it('reads VmRSS in bytes, and none for a zombie', () => {
    expect(parseRssBytes('Name:\tnode\nVmPeak:\t  999 kB\nVmRSS:\t  123456 kB\nThreads:\t11\n')).toBe(123456 * 1024);
    expect(parseRssBytes('Name:\tnode\nState:\tZ (zombie)\n')).toBe(0);
  });

  it('samples this process and finds it in its own tree; a gone pid has no sample', () => {
    const sample = sampleProcess(process.pid)!;
    expect(sample.rssBytes).toBeGreaterThan(10 * 2 ** 20);
    expect(sample.cpuSeconds).toBeGreaterThan(0);
    expect(processTree(process.ppid)).toContain(process.pid);
    expect(sampleProcess(2 ** 22 + 1)).toBeUndefined(); // above pid_max's ceiling
    expect(coresBetween({ cpuSeconds: 10, rssBytes: 0 }, { cpuSeconds: 13, rssBytes: 0 }, 2)).toBe(1.5);
  });
});

describe('bench:scale aggregation', () => {
  it('turns counts over a window into rates, in all and per process', () => {
    expect(requestRates({ total: 300, byMethod: { update: 240, get: 60 } }, 60)).toEqual({ perSecond: 5, byMethod: { update: 4, get: 1 } });
    expect(requestRates({ total: 30 }, 10)).toEqual({ perSecond: 3 });
    expect(requestRates({ total: 30, memberWrites: 0 }, 10)).toEqual({ perSecond: 3, memberWritesPerSecond: 0 });
    expect(requestRates({ total: 30, memberWrites: 20 }, 10)).toEqual({ perSecond: 3, memberWritesPerSecond: 2 });
    expect(requestRates({ total: 30, memberWrites: 20, memberWriters: 4 }, 10)).toEqual({ perSecond: 3, memberWritesPerSecond: 2, memberWriters: 4 });
    expect(requestRates({ total: 30, memberWrites: 20, memberWritesByMethod: { patch: 18, create: 2 } }, 10)).toEqual({ perSecond: 3, memberWritesPerSecond: 2, memberWritesByMethod: { patch: 1.8, create: 0.2 } });
    const zero = { put: 0, delete: 0, corrupt: 0, progress: 0 };
    // two worker processes: the first hosts the masters
    const before = [
      { master: { put: 10, delete: 0, corrupt: 0, progress: 1 }, worker: { put: 5, delete: 1, corrupt: 0, progress: 0 } },
      { master: zero, worker: { put: 0, delete: 0, corrupt: 0, progress: 0 } },
    ];
    const after = [
      { master: { put: 110, delete: 10, corrupt: 0, progress: 3 }, worker: { put: 85, delete: 1, corrupt: 0, progress: 2 } },
      { master: zero, worker: { put: 20, delete: 0, corrupt: 0, progress: 0 } },
    ];
    expect(watchRates(before, after, 10, { master: 2, worker: 18 })).toEqual({
      eventsPerSecond: 21,
      perProcessPerSecond: 1.05,
      perMasterPerSecond: 5.5,
      perWorkerPerSecond: 0.5555555555555556,
      bookmarksPerSecond: 0.4,
    });
  });

  it('counts as member writes the writes to member records and heartbeat Leases, not an announce probe\'s, an election\'s or a read', () => {
    const lease = (verb: string, name: string, resource = 'leases') => ({ auditID: '1', verb, objectRef: { resource, namespace: 'ns', name } });
    const cluster = 'bench-scale-mip1x2y3-a1b2c3';
    expect(isMemberWrite(lease('patch', `${cluster}-member-worker-worker-7-3f2a9c1d`))).toBe(true);
    expect(isMemberWrite(lease('patch', `${cluster}-heartbeat-worker-worker-7-3f2a9c1d`))).toBe(true);
    expect(isMemberWrite(lease('delete', `${cluster}-member-worker-crash-0-1-3f2a9c1d`))).toBe(true);
    expect(isMemberWrite(lease('create', `${cluster}-member-worker-probe-3-3f2a9c1d`))).toBe(false);
    expect(isMemberWrite(lease('update', `${cluster}-election-election-5`))).toBe(false);
    expect(isMemberWrite(lease('get', `${cluster}-member-worker-worker-7-3f2a9c1d`))).toBe(false);
    expect(isMemberWrite(lease('patch', `${cluster}-member-worker-7`, 'pods'))).toBe(false);
  });

  it('counts a change as seen once the last watcher saw it, and not before', () => {
    const times = new Map([
      ['master-0', 1010],
      ['master-1', 1250],
    ]);
    expect(seenByEvery(1000, times, ['master-0', 'master-1'])).toBe(250);
    expect(seenByEvery(1000, times, ['master-0', 'master-1', 'master-2'])).toBeUndefined();
    expect(seenByEvery(1000, undefined, ['master-0'])).toBeUndefined();
  });

  it('shows how many completed when some timed out, and says saturated', () => {
    expect(latencyCell(latency([100, 300], 2))).toBe('100 / 300');
    expect(latencyCell(latency([100], 3))).toBe('100 / 100 (1 of 3)');
    expect(latencyCell(latency([], 3))).toBe('none of 3');
    expect(latencyCell(latency([], 0))).toBe('n/a');
    const none = { attempted: 0 };
    const rows: ScaleRow[] = [
      { backend: 'etcd', members: 100, opened: 100, windowSeconds: 60, saturated: ['handover: 1 of 10 did not complete'], announce: latency([12], 1), crash: none, handover: latency([80], 10) },
      { backend: 'etcd', members: 300, opened: 0, windowSeconds: 0, saturated: [], skipped: 'saturated at N = 100', announce: none, crash: none, handover: none },
      { backend: 'zookeeper', members: 100, opened: 0, windowSeconds: 0, saturated: [], failed: 'timed out after 120000 ms waiting for worker 0 to start', announce: none, crash: none, handover: none },
    ];
    const [, , saturated, skipped, failed] = renderScaleTable(rows).split('\n').map((line) => line.slice(1, -1).split('|').map((c) => c.trim()));
    const column = (header: string) => SCALE_COLUMNS.findIndex((c) => c.header === header);
    expect(saturated![column('kept up')]).toBe('SATURATED');
    expect(saturated![column('handover p50 / p99 ms')]).toBe('80 / 80 (1 of 10)');
    expect(skipped![column('kept up')]).toBe('not run');
    expect(skipped![column('server CPU cores (idle)')]).toBe('');
    // the harness could not run it: not the system's saturation
    expect(failed![column('kept up')]).toBe('failed');
    expect(renderScaleNotes(rows)).toContain('- N = 100, zookeeper: the harness failed: timed out after 120000 ms waiting for worker 0 to start.');
  });

  it('names the liveness mode beside the backend where it is not the default', () => {
    const none = { attempted: 0 };
    const row = (liveness?: 'heartbeat' | 'reaper'): ScaleRow => ({ backend: 'kubernetes', ...(liveness ? { liveness } : {}), members: 100, opened: 0, windowSeconds: 0, saturated: [], skipped: 'test', announce: none, crash: none, handover: none });
    const backends = renderScaleTable([row(), row('heartbeat'), row('reaper')]).split('\n').slice(2).map((line) => line.slice(1, -1).split('|')[1]!.trim());
    expect(backends).toEqual(['kubernetes', 'kubernetes', 'kubernetes (reaper)']);
    expect(renderScaleNotes([row('reaper')])).toMatch(/^- N = 100, kubernetes \(reaper\): /);
    expect(seriesName({ backend: 'kubernetes', liveness: 'pod' })).toBe('kubernetes (pod)');
    // N = 0 has no member setting
    expect(seriesName({ backend: 'kubernetes', members: 0 })).toBe('kubernetes (elections only)');
  });

  it('shows the member writes and the load average of a row, n/a in results from before they were recorded', () => {
    const none = { attempted: 0 };
    const base: ScaleRow = { backend: 'kubernetes', liveness: 'pod', members: 1000, opened: 1000, windowSeconds: 60, saturated: [], announce: none, crash: none, handover: none };
    const measured: ScaleRow = { ...base, requests: { source: 'audit', perSecond: 51.2, memberWritesPerSecond: 0 }, load: { before: 3.14, after: 4.56 } };
    const [, , now, before] = renderScaleTable([measured, base]).split('\n').map((line) => line.slice(1, -1).split('|').map((c) => c.trim()));
    const column = (header: string) => SCALE_COLUMNS.findIndex((c) => c.header === header);
    expect(now![column('member writes/s')]).toBe('0.0');
    expect(now![column('load avg before / after')]).toBe('3.1 / 4.6');
    expect(before![column('member writes/s')]).toBe('n/a');
    expect(before![column('load avg before / after')]).toBe('n/a');
    expect(renderScaleNotes([{ ...base, members: 0, liveness: undefined, opened: 300 }])).toContain("- N = 0, kubernetes (elections only): 300 candidates' registries (no member) open; window 60 s.");
  });

  it('divides the member writes by the heartbeats the open members send: one write each is 1.00, n/a where nobody heartbeats', () => {
    const none = { attempted: 0 };
    const row = (over: Partial<ScaleRow>): ScaleRow => ({ backend: 'kubernetes', liveness: 'heartbeat', members: 1000, opened: 1000, windowSeconds: 60, saturated: [], requests: { source: 'audit', perSecond: 252, memberWritesPerSecond: 200 }, announce: none, crash: none, handover: none, ...over });
    expect(writesPerHeartbeat(row({}))).toBe(1);
    expect(writesPerHeartbeat(row({ requests: { source: 'audit', perSecond: 452, memberWritesPerSecond: 400 } }))).toBe(2);
    expect(writesPerHeartbeat(row({ memberTiming: { heartbeatIntervalMs: 10_000, leaseDurationMs: 40_000 }, requests: { source: 'audit', perSecond: 151, memberWritesPerSecond: 100 } }))).toBe(1);
    expect(writesPerHeartbeat(row({ liveness: 'pod' }))).toBeUndefined();
    expect(writesPerHeartbeat(row({ members: 0, liveness: undefined, opened: 300 }))).toBeUndefined();
    expect(writesPerHeartbeat(row({ requests: { source: 'audit', perSecond: 252 } }))).toBeUndefined();
    // over the records written, where counted: 900 of the 1000 open wrote
    expect(writesPerHeartbeat(row({ requests: { source: 'audit', perSecond: 232, memberWritesPerSecond: 180, memberWriters: 900 } }))).toBe(1);
    const [, , cells] = renderScaleTable([row({ requests: { source: 'audit', perSecond: 252, memberWritesPerSecond: 199.9 } })]).split('\n').map((line) => line.slice(1, -1).split('|').map((c) => c.trim()));
    expect(cells![SCALE_COLUMNS.findIndex((c) => c.header === 'writes per heartbeat')]).toBe('1.00');
    expect(renderScaleNotes([row({ requests: { source: 'audit', perSecond: 252, memberWritesPerSecond: 201, memberWritesByMethod: { patch: 199.9, create: 1.1 }, memberWriters: 1003 } })])).toContain('member writes/s by method: patch 199.9, create 1.1 (1003 records written)');
  });

  it('names a member timing that is not the default, and records one only then', () => {
    const timing = { heartbeatIntervalMs: 10_000, leaseDurationMs: 40_000 };
    expect(memberFields({ liveness: 'reaper', ...timing })).toEqual({ liveness: 'reaper', memberTiming: timing });
    expect(memberFields({ liveness: 'heartbeat', ...DEFAULT_MEMBER_TIMING })).toEqual({ liveness: 'heartbeat' });
    expect(seriesName({ backend: 'kubernetes', liveness: 'reaper', memberTiming: timing })).toBe('kubernetes (reaper, 10000/40000 ms)');
    expect(seriesName({ backend: 'etcd', liveness: 'heartbeat', memberTiming: timing })).toBe('etcd (10000/40000 ms)');
    expect(seriesName({ backend: 'etcd', liveness: 'heartbeat' })).toBe('etcd');
  });
});
