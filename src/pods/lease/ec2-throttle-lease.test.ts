// The cluster's EC2 throttle Lease against the emulator's Kubernetes API: the first agent EC2
// throttles writes the hold, the others read it and write nothing; the pace is the agents' share
// of half a bucket's refill, doubled per round of throttling and decaying after the hold.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestEmulator, type TestEmulator } from '../../emulator/testing/test-emulator.ts';
import { kubeDaemonSetSize } from '../daemonset-size.ts';
import { BACKGROUND_SHARE, Ec2ThrottleLease, THROTTLE_ANNOTATION } from './ec2-throttle-lease.ts';
import { kubeLeases } from './lease.ts';

let t: TestEmulator;
before(async () => {
  t = await startTestEmulator();
});
after(() => t.close());

const quiet = { warn() {}, info() {} };
const LEASES = '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases';

async function daemonSet(name: string, desired: number): Promise<void> {
  const made = await t.kube('POST', '/apis/apps/v1/namespaces/kube-system/daemonsets', {
    metadata: { name },
    spec: {},
    status: { desiredNumberScheduled: desired },
  });
  assert.equal(made.status, 201);
}

/** An agent's signal on Lease `lease`, on a wall clock the test moves. */
function agent(lease: string, clock: { ms: number }, daemonSetName: string, identity: string) {
  const api = { baseUrl: t.url };
  return new Ec2ThrottleLease({
    leases: kubeLeases(api, { namespace: 'kube-system', name: lease }),
    identity,
    now: () => clock.ms,
    random: () => 0.5,
    agents: kubeDaemonSetSize(api, { namespace: 'kube-system', name: daemonSetName }),
    refillPerSecond: (action) => (action.startsWith('Describe') ? 20 : 5),
    log: quiet,
    readEveryMs: 3_600_000,
    holdMs: 5000,
  });
}

function writesTo(lease: string): number {
  return t.logs.filter(
    (l) =>
      l.msg === 'kube' &&
      String(l.path).startsWith(LEASES) &&
      Number(l.status) < 300 &&
      (l.method === 'POST' ? true : String(l.path).endsWith(`/${lease}`)),
  ).length;
}

test('the pace is the agents’ share of half the refill, from the DaemonSet’s count', async () => {
  await daemonSet('pace-agents', 1000);
  const clock = { ms: Date.UTC(2026, 0, 1) };
  const a = agent('pace', clock, 'pace-agents', 'node-a');
  await a.start();
  a.stop();
  assert.equal(a.agents, 1000);
  assert.equal(a.intervalMs('CreateNetworkInterface'), (1000 * 1000) / (5 * BACKGROUND_SHARE));
  assert.equal(a.intervalMs('DescribeNetworkInterfaces'), (1000 * 1000) / (20 * BACKGROUND_SHARE));
  assert.equal(a.heldForMs('CreateNetworkInterface'), 0);
  const alone = agent('pace', clock, 'no-such-daemonset', 'node-b');
  await alone.start();
  alone.stop();
  assert.equal(alone.agents, 1, 'without the DaemonSet an agent paces as if alone');
});

test('many agents throttled together: one writes the hold, the others read it and write nothing', async () => {
  await daemonSet('herd-agents', 20);
  const clock = { ms: Date.UTC(2026, 0, 1) };
  const agents = Array.from({ length: 20 }, (_, i) => agent('herd', clock, 'herd-agents', `node-${i}`));
  await Promise.all(agents.map((a) => a.start()));
  const before = writesTo('herd');
  for (const a of agents) a.throttled('AssignPrivateIpAddresses', true);
  await Promise.all(agents.map((a) => a.told()));
  assert.equal(writesTo('herd') - before, 1, 'one write for the whole cluster');
  for (const a of agents) {
    assert.equal(a.heldForMs('AssignPrivateIpAddresses'), 5000);
    assert.equal(a.heldForMs('CreateNetworkInterface'), 0, 'the hold is per action');
    assert.equal(a.throttledWithin(60_000), true);
    assert.equal(a.intervalMs('AssignPrivateIpAddresses'), (20 * 2 * 1000) / (5 * BACKGROUND_SHARE));
  }
  const lease = await t.kube<{ metadata: { annotations: Record<string, string> } }>('GET', `${LEASES}/herd`);
  const records = JSON.parse(lease.json.metadata.annotations[THROTTLE_ANNOTATION] ?? '{}');
  assert.deepEqual(Object.keys(records), ['AssignPrivateIpAddresses']);
  for (const a of agents) a.stop();
});

test('the pace doubles per round of throttled paced calls and halves back every 30 s after the hold', async () => {
  await daemonSet('round-agents', 10);
  const clock = { ms: Date.UTC(2026, 0, 1) };
  const a = agent('rounds', clock, 'round-agents', 'node-a');
  const b = agent('rounds', clock, 'round-agents', 'node-b');
  await Promise.all([a.start(), b.start()]);
  const base = (10 * 1000) / (5 * BACKGROUND_SHARE);
  a.throttled('CreateNetworkInterface', true);
  await a.told();
  assert.equal(a.intervalMs('CreateNetworkInterface'), 2 * base);
  clock.ms += 1000;
  b.throttled('CreateNetworkInterface', true); // still held: the same round, nothing written
  await b.told();
  assert.equal(b.intervalMs('CreateNetworkInterface'), 2 * base);
  clock.ms += 5000; // the hold is over: a throttle now is a new round
  b.throttled('CreateNetworkInterface', true);
  await b.told();
  assert.ok(Math.abs(b.intervalMs('CreateNetworkInterface') - 4 * base) < base * 0.2);
  clock.ms += 5000 + 30_000;
  assert.ok(Math.abs(b.intervalMs('CreateNetworkInterface') - 2 * base) < base * 0.2);
  clock.ms += 600_000;
  assert.equal(b.intervalMs('CreateNetworkInterface'), base, 'back to the share alone');
  assert.equal(b.throttledWithin(60_000), false);
  a.throttled('DescribeSubnets', false);
  await a.told();
  assert.equal(a.heldForMs('DescribeSubnets'), 5000, 'calls pods waited for, throttled, hold the action');
  const describeBase = (10 * 1000) / (20 * BACKGROUND_SHARE);
  assert.equal(a.intervalMs('DescribeSubnets'), describeBase, 'but do not slow its pace');
  a.stop();
  b.stop();
});

test('a round begun by a pod’s call doubles once a paced call is throttled in it, and only once', async () => {
  await daemonSet('halving-agents', 10);
  const clock = { ms: Date.UTC(2026, 0, 1) };
  const [a, b, c] = ['node-a', 'node-b', 'node-c'].map((id) => agent('halving', clock, 'halving-agents', id));
  if (a === undefined || b === undefined || c === undefined) throw new Error('three agents');
  await Promise.all([a.start(), b.start(), c.start()]);
  const base = (10 * 1000) / (5 * BACKGROUND_SHARE);
  const writes = writesTo('halving');
  a.throttled('AssignPrivateIpAddresses', false);
  await a.told();
  assert.equal(a.intervalMs('AssignPrivateIpAddresses'), base, 'a herd of pods’ calls: held, not slowed');
  clock.ms += 500;
  b.throttled('AssignPrivateIpAddresses', true);
  await b.told();
  assert.equal(
    b.intervalMs('AssignPrivateIpAddresses'),
    2 * base,
    'a paced call throttled in the round: doubled',
  );
  c.throttled('AssignPrivateIpAddresses', true);
  await c.told();
  assert.equal(c.intervalMs('AssignPrivateIpAddresses'), 2 * base, 'once per round');
  assert.equal(writesTo('halving') - writes, 2);
  // After the hold, another herd of pods' calls only holds again.
  clock.ms += 5000 + 10_000;
  const decayed = b.intervalMs('AssignPrivateIpAddresses');
  a.throttled('AssignPrivateIpAddresses', false);
  await a.told();
  assert.ok(Math.abs(a.intervalMs('AssignPrivateIpAddresses') - decayed) < base * 0.01, 'the pace as it was');
  assert.equal(a.heldForMs('AssignPrivateIpAddresses'), 5000);
  for (const x of [a, b, c]) x.stop();
});

test('while its agent starts, the signal reads the Lease every ~2 s instead of every ~15 s', async () => {
  await daemonSet('starting-agents', 100);
  const clock = { ms: Date.UTC(2026, 0, 1) };
  const api = { baseUrl: t.url };
  const a = new Ec2ThrottleLease({
    leases: kubeLeases(api, { namespace: 'kube-system', name: 'starting' }),
    identity: 'node-a',
    now: () => clock.ms,
    random: () => 0.5,
    agents: kubeDaemonSetSize(api, { namespace: 'kube-system', name: 'starting-agents' }),
    refillPerSecond: () => 20,
    log: quiet,
    readEveryMs: 3_600_000,
    startingReadEveryMs: 40,
  });
  await a.start();
  const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
  a.starting(true);
  a.starting(true); // said twice: still one reader
  const before = a.reads;
  await pause(500);
  const whileStarting = a.reads - before;
  assert.ok(whileStarting >= 5 && whileStarting <= 13, `${whileStarting} reads in 0.5 s at one per 40 ms`);
  // Another agent's hold is seen at the next read, not 15 s later.
  const other = agent('starting', clock, 'starting-agents', 'node-b');
  await other.start();
  other.throttled('DescribeSubnets', false);
  await other.told();
  await pause(150);
  assert.equal(a.heldForMs('DescribeSubnets'), 5000);
  a.starting(false);
  await pause(100);
  const after = a.reads;
  await pause(400);
  assert.equal(a.reads, after, 'started: back to the usual reads');
  a.stop();
  other.stop();
});
