// The pool over the agent's EC2 budget: top-ups sized to demand and to the budget, the state and
// the ADD's error when growth waits for a token, and nothing given back while EC2 throttles.
import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { CloudError } from '../../cloud/cloud.ts';
import { Ec2Budget } from '../../cloud/ec2-budget.ts';
import { LimitedCloud } from '../../cloud/limited-cloud.ts';
import { FixedFleetSignal } from '../../cloud/testing/fixed-fleet-signal.ts';
import { VirtualClock } from '../../cloud/testing/virtual-clock.ts';
import { silentLogger } from '../../infra/log.ts';
import { FakeCloud } from '../testing/fake-cloud.ts';
import { AddressPool } from './pool.ts';
import { PoolExhaustedError } from './pool-addresses.ts';
import { budgetBlocked, topUpCount } from './pool-budget.ts';
import { PoolManager } from './pool-manager.ts';
import type { WarmPoolTargets } from './targets.ts';

const quiet = { info() {}, warn() {}, error() {} };
const running: PoolManager[] = [];
afterEach(async () => {
  for (const m of running.splice(0)) await m.stop();
});

function node(targets: Partial<WarmPoolTargets>, ceiling = { qps: 10, burst: 20 }) {
  const clock = new VirtualClock();
  const fake = new FakeCloud({ limits: { maxEnis: 8, ipsPerEni: 30 } });
  const cloud = new LimitedCloud({
    inner: fake,
    limit: { ...ceiling, maxAttempts: 3 },
    log: silentLogger,
    clock,
  });
  const pool = new AddressPool({ cooldownMs: 30_000 });
  const manager = new PoolManager({
    cloud,
    pool,
    clock,
    log: quiet,
    metadata: fake.meta,
    limits: fake.limits,
    targets: { warmEniTarget: 1, cooldownSeconds: 30, ...targets },
    ec2Budget: cloud,
    intervalMs: 3_600_000,
  });
  running.push(manager);
  const settle = async () => {
    while ((await clock.run(manager.runPass())).kind !== 'none') {}
  };
  return { clock, fake, cloud, pool, manager, settle };
}

const assigns = (fake: FakeCloud) => fake.calls.filter((c) => c.startsWith('assignPrivateIps')).length;

test('a top-up asks for the shortfall, the ADDs waiting and what pods take before the next call', () => {
  assert.equal(topUpCount({ short: 1, waiting: 0, allocationsPerSecond: 0, callsPerSecond: 10 }), 1);
  assert.equal(topUpCount({ short: 5, waiting: 3, allocationsPerSecond: 0, callsPerSecond: 10 }), 8);
  assert.equal(
    topUpCount({ short: 1, waiting: 0, allocationsPerSecond: 10, callsPerSecond: 10 }),
    10,
    'a second of pods at least',
  );
  assert.equal(
    topUpCount({ short: 1, waiting: 0, allocationsPerSecond: 2, callsPerSecond: 0.1 }),
    20,
    'one call per 10 s: 10 s of pods',
  );
  assert.equal(
    topUpCount({ short: 1, waiting: 0, allocationsPerSecond: 2, callsPerSecond: 0.001 }),
    120,
    'a minute at most',
  );
});

test('WARM_IP_TARGET=5, pods one after another at 10/s: far fewer calls than pods, and none starves', async () => {
  const { clock, fake, manager, settle } = node({ warmIpTarget: 5 });
  await clock.run(manager.init());
  await settle();
  for (let pod = 0; pod < 150; pod++) {
    clock.pass(100);
    const got = manager.allocate(`vpcnet/p${pod}/eth0`);
    assert.ok(got !== undefined, `pod ${pod} got an address at once`);
    await settle();
  }
  const calls = assigns(fake);
  assert.ok(calls <= 25, `${calls} AssignPrivateIpAddresses for 150 pods (one per pod starved the node)`);
  assert.equal(manager.health().growth.blocked, null);
});

test('while growth waits for an EC2 token the state says ec2Budget, and the ADD is told so', async () => {
  const { clock, manager, settle } = node({ warmIpTarget: 1 }, { qps: 0.05, burst: 1 });
  await clock.run(manager.init()); // the describe takes the one token: the next waits 20 s
  const waited = manager.waitForAddress(5_000).catch((e: unknown) => e);
  const pass = manager.runPass();
  await new Promise((r) => setImmediate(r));
  const growth = manager.health().growth;
  assert.equal(growth.blocked, 'ec2Budget');
  assert.ok(growth.blocked !== null && growth.wait !== undefined);
  assert.equal(growth.wait.action, 'AssignPrivateIpAddresses');
  assert.ok(growth.wait.readyInMs > 15_000 && growth.wait.readyInMs <= 20_000, `${growth.wait.readyInMs}`);
  const err = await waited;
  assert.ok(err instanceof PoolExhaustedError && err.waitingForEc2);
  assert.match(err.message, /the pool waits for the EC2 API budget: AssignPrivateIpAddresses has waited/);
  await clock.run(pass);
  await settle();
  assert.equal(manager.health().growth.blocked, null, 'the token came: nothing blocks');
});

test('nothing is given back while EC2 throttles; after a minute without throttling the excess goes', async () => {
  const { clock, fake, cloud, pool, manager, settle } = node({ warmIpTarget: 2 });
  await clock.run(manager.init());
  await settle();
  const taken = Array.from({ length: 6 }, (_, i) => manager.allocate(`vpcnet/p${i}/eth0`));
  await settle();
  fake.failNext('describeSubnets', new CloudError('slow down', 'RequestLimitExceeded', true), 3);
  // Throttled three times, then answered (that the subnet does not exist: any answer will do).
  await assert.rejects(clock.run(cloud.describeSubnets({ subnetIds: ['subnet-x'] })), /after 4 attempts/);
  for (const t of taken) if (t) manager.release(t.ip);
  clock.pass(31_000);
  await settle();
  assert.ok(pool.stats(clock.now()).available > 2, 'the excess stays while releases are held');
  assert.match(manager.health().releasesHeld ?? '', /throttled this agent/);
  assert.equal(fake.calls.filter((c) => c.startsWith('unassign')).length, 0, 'no release was sent');
  clock.pass(60_000);
  await settle();
  assert.equal(pool.stats(clock.now()).available, 2);
  assert.equal(manager.health().releasesHeld, undefined);
});

test("a warm top-up waiting its turn in the cluster's pace is not growth blocked; one held, throttled or an ADD's is", async () => {
  const clock = new VirtualClock();
  const fleet = new FixedFleetSignal(clock.now);
  fleet.paceMs.set('AssignPrivateIpAddresses', 60_000);
  const budgets: Ec2Budget[] = [];
  const calls: Promise<unknown>[] = [];
  const node = (...asks: [string, 'grow' | 'demand'][]) => {
    const b = new Ec2Budget({ ceiling: { qps: 10, burst: 20 }, clock, random: () => 0.5, fleet });
    budgets.push(b);
    for (const [action, cls] of asks) calls.push(b.acquire(action, cls).catch(() => {}));
    return b as Ec2Budget & Parameters<typeof budgetBlocked>[0];
  };
  const paced = node(['AssignPrivateIpAddresses', 'grow']);
  clock.pass(20_000);
  assert.equal(paced.waiting()?.atPacedTurn, true);
  assert.equal(
    budgetBlocked(paced, 0),
    undefined,
    'its turn, drawn within the interval, has not come: normal',
  );
  assert.equal(budgetBlocked(paced, undefined), undefined, 'no growth step under way');
  fleet.heldUntil.set('AssignPrivateIpAddresses', clock.now() + 5000);
  assert.equal(budgetBlocked(paced, 0)?.blocked, 'ec2Budget', 'the cluster holds the action: EC2 throttles');
  fleet.heldUntil.clear();
  // An action the fleet does not pace, whose lane EC2 just throttled: the wait is the lane's.
  const throttled = node();
  throttled.answered('CreateNetworkInterface', clock.now() - 100, true);
  calls.push(throttled.acquire('CreateNetworkInterface', 'grow').catch(() => {}));
  assert.equal(throttled.waiting()?.atPacedTurn, false, JSON.stringify(throttled.waiting()));
  assert.equal(budgetBlocked(throttled, 0)?.blocked, 'ec2Budget', 'EC2 throttled this agent');
  const add = node(['AssignPrivateIpAddresses', 'grow']);
  add.demandWaits();
  assert.equal(add.waiting(), undefined, 'an ADD comes: the top-up goes at once, as its demand');
  throttled.answered('AssignPrivateIpAddresses', clock.now() - 100, true);
  calls.push(throttled.acquire('AssignPrivateIpAddresses', 'demand').catch(() => {}));
  assert.equal(throttled.waiting()?.cls, 'demand');
  assert.equal(budgetBlocked(throttled, 0)?.blocked, 'ec2Budget', 'a pod waits');
  for (const b of budgets) b.close('test ends');
  await Promise.all(calls);
});
