import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { SecondCounts } from '../../src/emulator/ec2/call-rates.ts';
import { CREATED_BY_TAG } from '../../src/ipam/enis/eni-ownership.ts';
import { type EndEni, type FigureInputs, fleetFigures, percentile } from './figures.ts';
import type { NodeReport } from './protocol.ts';

function second(s: number, byAction: Record<string, [calls: number, throttled: number]>): SecondCounts {
  const entries = Object.entries(byAction).map(
    ([a, [calls, throttled]]) => [a, { calls, throttled }] as const,
  );
  return {
    second: s,
    calls: entries.reduce((n, [, c]) => n + c.calls, 0),
    throttled: entries.reduce((n, [, c]) => n + c.throttled, 0),
    byAction: Object.fromEntries(entries),
  };
}

function node(instanceId: string, enis: Record<string, string[]>, assigned = 0): NodeReport {
  return {
    index: 0,
    instanceId,
    enis,
    pendingEnis: [],
    assigned,
    growthBlocked: null,
    warnings: 0,
    errors: 0,
  };
}

function eni(eniId: string, instanceId: string | null, ips: string[], ours = true): EndEni {
  return {
    eniId,
    secondaryIps: ips,
    tags: ours ? { [CREATED_BY_TAG]: 'vpcnet' } : {},
    attachment: instanceId === null ? null : { instanceId },
  };
}

const base: FigureInputs = {
  pods: [],
  seconds: [],
  startSecond: 100,
  nodes: 10,
  retryingNodes: {},
  refillPerSecond: {},
  endEnis: [],
  runningInstances: new Set(),
  reports: [],
};

test('percentiles are nearest-rank; pod starts count failed ADDs and pods that never started', () => {
  const sorted = Array.from({ length: 100 }, (_, i) => i + 1);
  assert.equal(percentile(sorted, 50), 50);
  assert.equal(percentile(sorted, 99), 99);
  assert.equal(percentile([], 99), 0);
  const f = fleetFigures({
    ...base,
    pods: [
      { name: 'a', startMs: 30, failedAttempts: 0 },
      { name: 'b', startMs: 10, failedAttempts: 2 },
      { name: 'c', failedAttempts: 3 },
    ],
    seconds: [second(100, { AssignPrivateIpAddresses: [4, 0] })],
  });
  assert.deepEqual(f.podStartMs, { p50: 10, p95: 30, p99: 30, max: 30 });
  assert.equal(f.podStarts, 2);
  assert.equal(f.failedPodStarts, 5);
  assert.equal(f.podsNeverStarted, 1);
  assert.equal(f.ec2CallsPerPodStart, 2);
});

test("throttling after the first 10 s, the peak, the buckets' refill and retry storms come from EC2's counts", () => {
  const f = fleetFigures({
    ...base,
    seconds: [
      second(100, { DescribeNetworkInterfaces: [50, 40] }),
      second(110, { AssignPrivateIpAddresses: [99, 1] }),
      second(111, { AssignPrivateIpAddresses: [100, 0] }),
    ],
    refillPerSecond: {
      DescribeNetworkInterfaces: 20,
      AssignPrivateIpAddresses: 5,
      CreateNetworkInterface: 5,
    },
    retryingNodes: { '100': 2, '101': 1 },
    nodes: 10,
  });
  assert.equal(f.throttledCalls, 41);
  assert.equal(f.throttledShareAfter10s, 0.005, 'the first 10 s are the warm-up');
  assert.equal(f.peakCallsPerSecond, 100);
  assert.equal(f.bucketLimitPerSecond, 25, 'only the actions called count');
  assert.equal(f.retryStormSeconds, 1, 'a second in which more than 10% of the nodes retried');
  assert.deepEqual(f.callsByAction.AssignPrivateIpAddresses, { calls: 199, throttled: 1 });
});

test('release calls count as sent while throttled only in seconds with a RequestLimitExceeded', () => {
  const f = fleetFigures({
    ...base,
    seconds: [
      second(100, { AssignPrivateIpAddresses: [10, 2], UnassignPrivateIpAddresses: [3, 0] }),
      second(101, { DeleteNetworkInterface: [4, 0] }),
    ],
  });
  assert.equal(f.releaseCallsWhileThrottled, 3);
});

test('after a halving: the throttled share from then on and the first calm 10 s window', () => {
  const seconds = [second(100, { AssignPrivateIpAddresses: [10, 0] })];
  for (let s = 101; s < 140; s++)
    seconds.push(second(s, { AssignPrivateIpAddresses: s < 105 ? [10, 5] : [10, 0] }));
  const f = fleetFigures({ ...base, seconds, halvedAtSecond: 101 });
  assert.equal(f.halved?.recoverySeconds, 4, 'the window starting at second 105 has no throttle');
  assert.equal(f.halved?.throttledShare, 0.0513);
  const never = fleetFigures({
    ...base,
    seconds: [second(101, { AssignPrivateIpAddresses: [10, 5] })],
    halvedAtSecond: 101,
  });
  assert.equal(never.halved?.recoverySeconds, null);
});

test('leaks: our ENIs left unattached or unknown to their agent, addresses outside the pools, and addresses still lent', () => {
  const f = fleetFigures({
    ...base,
    runningInstances: new Set(['i-1', 'i-2']),
    reports: [node('i-1', { 'eni-a': ['10.0.0.1', '10.0.0.2'] }, 1), node('i-2', {})],
    endEnis: [
      eni('eni-a', 'i-1', ['10.0.0.1', '10.0.0.2', '10.0.0.3']),
      eni('eni-b', null, ['10.0.0.4']),
      eni('eni-c', null, ['10.0.0.5'], false),
      eni('eni-d', 'i-2', ['10.0.0.6', '10.0.0.7']),
      eni('eni-e', 'i-gone', []),
    ],
  });
  // i-1 still lends 1; eni-a's 10.0.0.3 is outside the pool; eni-b (1) and eni-d (2) are ENIs
  // leaked with their addresses; eni-e is on a terminated instance; eni-c is not vpcnet's.
  assert.equal(f.leakedEnis, 3);
  assert.equal(f.leakedAddresses, 1 + 1 + 1 + 2);
  assert.equal(f.leaks.length, 5, f.leaks.join('\n'));
  const clean = fleetFigures({
    ...base,
    runningInstances: new Set(['i-1']),
    reports: [node('i-1', { 'eni-a': ['10.0.0.1'] })],
    endEnis: [eni('eni-a', 'i-1', ['10.0.0.1'])],
  });
  assert.deepEqual([clean.leakedEnis, clean.leakedAddresses, clean.leaks], [0, 0, []]);
});
