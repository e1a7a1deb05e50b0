import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../../infra/log.ts';
import { QueuedEvents } from '../../pods/kube-events.ts';
import { reportedMaxPods } from '../../pods/node-conditions.ts';
import { RecordingNode } from '../../pods/testing/recording-node.ts';
import {
  IP_EXHAUSTED_TAINT,
  NodeReadiness,
  type PoolReadiness,
  readinessOf,
  warnIfMaxPodsTooHigh,
} from './node-readiness.ts';

const serving: PoolReadiness = { free: 5, blocked: null, roomToGrow: true, warmWorth: 4 };

test('the condition says why the pool is empty and cannot grow, from what blocks it', () => {
  const empty = { ...serving, free: 0 };
  const cases: [PoolReadiness, boolean, string][] = [
    [serving, true, 'Serving'],
    [{ ...serving, blocked: 'RequestLimitExceeded: slow down' }, true, 'Serving'],
    [empty, true, 'PoolGrowing'],
    [{ ...empty, roomToGrow: false }, false, 'PoolEmpty:MaxEnis'],
    [
      { ...empty, blocked: 'cannot assign 1 addresses to ENI eni-1: InsufficientFreeAddressesInSubnet: …' },
      false,
      'PoolEmpty:SubnetExhausted',
    ],
    [
      { ...empty, blocked: 'UnauthorizedOperation: You are not authorized to perform this operation.' },
      false,
      'Ec2Unauthorized',
    ],
    [
      { ...empty, blocked: 'RequestLimitExceeded: Request limit exceeded. (after 5 attempts in 30.0 s)' },
      false,
      'Ec2Budget',
    ],
    [
      {
        ...empty,
        blocked: 'the node is unschedulable (taint node.kubernetes.io/unschedulable:NoSchedule): …',
      },
      false,
      'PoolEmpty:Cordoned',
    ],
    [
      { ...empty, blocked: 'subnet discovery: no subnet of vpc-1 in us-west-2a can take a new ENI: …' },
      false,
      'PoolEmpty:NoSubnet',
    ],
    [
      { ...empty, blocked: 'ENI eni-2 is attached at device 2 but its link is not configured: EIO' },
      false,
      'PoolEmpty:GrowthFailed',
    ],
  ];
  for (const [pool, ready, reason] of cases) {
    const r = readinessOf(pool);
    assert.deepEqual([r.ready, r.reason], [ready, reason], JSON.stringify(pool));
  }
});

function loop(mode: 'condition' | 'taint', pool: { now: PoolReadiness }) {
  const clock = { ms: 1_700_000_000_000 };
  const node = new RecordingNode();
  const readiness = new NodeReadiness({
    mode,
    conditions: node,
    taints: node,
    pool: () => pool.now,
    log: silentLogger,
    now: () => clock.ms,
    nodeName: 'node-1',
  });
  return { clock, node, readiness };
}

test('taint mode: throttling taints once it held 2 s; off only once a warm target is free or the pool can grow', async () => {
  const pool = { now: serving };
  const { clock, node, readiness } = loop('taint', pool);
  await readiness.check();
  pool.now = {
    free: 0,
    blocked: 'RequestLimitExceeded: Request limit exceeded.',
    roomToGrow: true,
    warmWorth: 4,
  };
  await readiness.check();
  clock.ms += 1000;
  await readiness.check();
  assert.deepEqual(node.taints, [], 'not before 2 s: one failed pass is no outage');
  clock.ms += 1000;
  await readiness.check();
  assert.deepEqual(node.taints, [IP_EXHAUSTED_TAINT]);
  // One address back while the pool still cannot grow: below the warm target, the taint stays.
  pool.now = { ...pool.now, free: 1 };
  clock.ms += 1000;
  await readiness.check();
  assert.deepEqual(node.taints, [IP_EXHAUSTED_TAINT], 'hysteresis');
  assert.equal(
    node.conditions.get('vpcnet.io/NetworkReady')?.status,
    'True',
    'the condition follows at once',
  );
  pool.now = { ...pool.now, free: 4 };
  clock.ms += 1000;
  await readiness.check();
  assert.deepEqual(node.taints, []);
  assert.deepEqual(node.writes, [
    'condition vpcnet.io/NetworkReady=True/Serving',
    'condition vpcnet.io/NetworkReady=False/Ec2Budget',
    'taint+ vpcnet.io/ip-exhausted',
    'condition vpcnet.io/NetworkReady=True/Serving',
    'taint- vpcnet.io/ip-exhausted',
  ]);
  assert.equal(readiness.state()?.tainted, false);
});

test('taint mode: a subnet with no address left taints at once, before more pods are bound', async () => {
  const pool = { now: serving };
  const { node, readiness } = loop('taint', pool);
  await readiness.check();
  pool.now = {
    free: 0,
    blocked: 'InsufficientFreeAddressesInSubnet: none left',
    roomToGrow: true,
    warmWorth: 4,
  };
  await readiness.check();
  assert.deepEqual(node.taints, [IP_EXHAUSTED_TAINT]);
  assert.equal(readiness.state()?.reason, 'PoolEmpty:SubnetExhausted');
});

test('taint mode: a pool that can grow again takes the taint off with fewer than a warm target free', async () => {
  const pool = { now: { free: 0, blocked: null, roomToGrow: false, warmWorth: 9 } as PoolReadiness };
  const { node, readiness } = loop('taint', pool);
  await readiness.check();
  assert.deepEqual(node.taints, [IP_EXHAUSTED_TAINT], 'full ENIs: at once');
  pool.now = { free: 2, blocked: null, roomToGrow: true, warmWorth: 9 };
  await readiness.check();
  assert.deepEqual(node.taints, []);
});

test('condition mode writes no taint, however long the node cannot serve, and keeps the condition', async () => {
  const pool = { now: { free: 0, blocked: null, roomToGrow: false, warmWorth: 1 } as PoolReadiness };
  const { clock, node, readiness } = loop('condition', pool);
  for (let i = 0; i < 30; i++, clock.ms += 1000) await readiness.check();
  assert.deepEqual(node.writes, ['condition vpcnet.io/NetworkReady=False/PoolEmpty:MaxEnis']);
  assert.equal(readiness.state()?.reason, 'PoolEmpty:MaxEnis');
  clock.ms += 600_000;
  await readiness.check();
  assert.equal(node.writes.length, 2, 'a heartbeat every 10 minutes');
});

test('a taint left by an earlier run comes off at the first ready check; a failed write is retried', async () => {
  const pool = { now: serving };
  const { node, readiness } = loop('taint', pool);
  node.taints.push(IP_EXHAUSTED_TAINT);
  node.failNext = new Error('connect ECONNREFUSED');
  await readiness.check();
  assert.match(readiness.state()?.lastError ?? '', /ECONNREFUSED/);
  await readiness.check();
  assert.deepEqual(node.taints, []);
  assert.equal(readiness.state()?.lastError, undefined);
});

test('a kubelet maxPods above what the node can address is a Warning event on the node', async () => {
  const posted: string[] = [];
  const events = new QueuedEvents({
    log: silentLogger,
    post: async (e) => void posted.push(`${e.type} ${e.reason} ${e.message}`),
  });
  const check = (pods: string) =>
    warnIfMaxPodsTooHigh({
      readNode: async () => ({ status: { capacity: { pods } } }),
      maxPodsOf: reportedMaxPods,
      addressable: 29,
      mode: 'secondary-IP mode',
      nodeName: 'node-1',
      events,
      log: silentLogger,
    });
  assert.equal(await check('29'), false);
  assert.equal(await check('110'), true);
  await events.stop();
  assert.equal(posted.length, 1);
  assert.match(posted[0]!, /^Warning MaxPodsExceedsAddresses kubelet maxPods 110 is above the 29 pods/);
});
