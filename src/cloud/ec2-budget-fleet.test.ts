// The EC2 budget under the cluster's throttle signal: the calls no pod waits for are paced to the
// fleet's interval and wait out its holds, spread at random over an interval after a hold and
// before a first release; an ADD's calls are neither; releases wait while the cluster throttles.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Ec2Budget } from './ec2-budget.ts';
import { FixedFleetSignal } from './testing/fixed-fleet-signal.ts';
import { VirtualClock } from './testing/virtual-clock.ts';

function setup(random = () => 0.5) {
  const clock = new VirtualClock();
  const fleet = new FixedFleetSignal(clock.now);
  const b = new Ec2Budget({ ceiling: { qps: 10, burst: 20 }, clock, random, fleet });
  return { clock, fleet, b };
}

test('top-ups of an action are paced to the fleet interval; an ADD demand call is not', async () => {
  const { clock, fleet, b } = setup();
  fleet.paceMs.set('AssignPrivateIpAddresses', 4000);
  const t0 = clock.now();
  await clock.run(b.acquire('AssignPrivateIpAddresses', 'grow'));
  assert.equal(clock.now(), t0, "an agent's first top-up of the action goes at once");
  await clock.run(b.acquire('AssignPrivateIpAddresses', 'grow'));
  assert.equal(clock.now() - t0, 4000, 'the next waits one fleet interval, though the lane has tokens');
  const t1 = clock.now();
  await clock.run(b.acquire('AssignPrivateIpAddresses', 'demand'));
  assert.equal(clock.now(), t1, 'a call a pod waits for is not paced');
  await clock.run(b.acquire('CreateNetworkInterface', 'grow'));
  assert.equal(clock.now(), t1, 'the pace is per action');
  assert.equal(b.rate('AssignPrivateIpAddresses'), 0.25);
});

test('while the cluster holds an action its background calls wait, then spread over an interval', async () => {
  const { clock, fleet, b } = setup(() => 0.25);
  fleet.paceMs.set('DescribeNetworkInterfaces', 8000);
  fleet.heldUntil.set('DescribeNetworkInterfaces', clock.now() + 5000);
  const t0 = clock.now();
  const read = b.acquire('DescribeNetworkInterfaces', 'read');
  await clock.run(b.acquire('DescribeNetworkInterfaces', 'demand'));
  assert.equal(clock.now(), t0, 'an ADD goes through the hold');
  const waiting = b.waiting();
  assert.equal(waiting?.cls, 'read');
  assert.equal(waiting?.readyInMs, 5000 + 0.25 * 8000, "the wait the pool's health shows includes the hold");
  await clock.run(read);
  assert.equal(clock.now() - t0, 5000 + 0.25 * 8000, 'after the hold, at its draw within one interval');
});

test('a top-up an ADD comes to wait for is promoted past the pace and the hold', async () => {
  const { clock, fleet, b } = setup();
  fleet.paceMs.set('AssignPrivateIpAddresses', 60_000);
  fleet.heldUntil.set('AssignPrivateIpAddresses', clock.now() + 30_000);
  const topUp = b.acquire('AssignPrivateIpAddresses', 'grow');
  const t0 = clock.now();
  b.promoteGrowth();
  await clock.run(topUp);
  assert.equal(clock.now(), t0);
});

test("an agent's first release is drawn within one interval; none go while the cluster throttles", async () => {
  const { clock, fleet, b } = setup(() => 0.75);
  fleet.paceMs.set('UnassignPrivateIpAddresses', 40_000);
  const t0 = clock.now();
  await clock.run(b.acquire('UnassignPrivateIpAddresses', 'release'));
  assert.equal(clock.now() - t0, 30_000, 'spread: 0.75 of the interval, not at once with every other agent');
  await clock.run(b.acquire('UnassignPrivateIpAddresses', 'release'));
  assert.equal(clock.now() - t0, 70_000, 'then one interval apart');
  assert.equal(b.releasesHeld(), undefined);
  fleet.clusterThrottled = true;
  assert.match(b.releasesHeld() ?? '', /throttled the cluster/);
  await assert.rejects(b.acquire('DeleteNetworkInterface', 'release'), { code: 'Ec2ReleaseHeld' });
});

test("a throttle that cuts this agent's lane is told to the fleet, once per round", () => {
  const { clock, fleet, b } = setup();
  const sentAt = clock.now();
  clock.pass(10);
  b.answered('AssignPrivateIpAddresses', sentAt, true);
  b.answered('AssignPrivateIpAddresses', sentAt, true); // sent before the cut: the same round
  assert.deepEqual(fleet.told, ['AssignPrivateIpAddresses']);
});
