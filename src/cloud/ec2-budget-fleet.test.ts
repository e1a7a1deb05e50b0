// The EC2 budget under the cluster's throttle signal: the calls no pod waits for are paced to the
// fleet's interval and wait out its holds, spread at random over an interval after a hold; an
// ADD's calls are neither; releases begin at the agent's turns, none while the cluster throttles.
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

test('calls no pod waits for are paced to the fleet interval per action; an ADD demand call is not', async () => {
  const { clock, fleet, b } = setup();
  fleet.paceMs.set('AssignPrivateIpAddresses', 4000);
  const t0 = clock.now();
  await clock.run(b.acquire('AssignPrivateIpAddresses', 'grow'));
  assert.equal(clock.now() - t0, 2000, "an agent's first top-up of the action is drawn within one interval");
  await clock.run(b.acquire('AssignPrivateIpAddresses', 'grow'));
  assert.equal(clock.now() - t0, 6000, 'the next waits one fleet interval, though the lane has tokens');
  const t1 = clock.now();
  await clock.run(b.acquire('AssignPrivateIpAddresses', 'demand'));
  assert.equal(clock.now(), t1, 'a call a pod waits for is not paced');
  await clock.run(b.acquire('CreateNetworkInterface', 'grow'));
  assert.equal(clock.now(), t1, 'the pace is per action (none for this one)');
  const jittered = setup(() => 0.9);
  jittered.fleet.paceMs.set('DescribeSubnets', 10_000);
  await jittered.clock.run(jittered.b.acquire('DescribeSubnets', 'read'));
  const t2 = jittered.clock.now();
  await jittered.clock.run(jittered.b.acquire('DescribeSubnets', 'read'));
  assert.equal(
    jittered.clock.now() - t2,
    14_000,
    'the interval is jittered (±50%), so agents fall out of step',
  );
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

test('the calls an ADD comes to wait behind go as demand, past the pace and the hold; releases stay', async () => {
  const { clock, fleet, b } = setup();
  fleet.paceMs.set('AssignPrivateIpAddresses', 60_000);
  fleet.heldUntil.set('AssignPrivateIpAddresses', clock.now() + 30_000);
  fleet.paceMs.set('DescribeNetworkInterfaces', 60_000);
  fleet.heldUntil.set('UnassignPrivateIpAddresses', clock.now() + 30_000);
  const topUp = b.acquire('AssignPrivateIpAddresses', 'grow');
  const sync = b.acquire('DescribeNetworkInterfaces', 'read');
  const release = b.acquire('UnassignPrivateIpAddresses', 'release');
  const t0 = clock.now();
  b.demandWaits();
  await clock.run(Promise.all([topUp, sync]));
  assert.equal(clock.now(), t0);
  assert.equal(b.waiting()?.cls, 'release', 'still held');
  await clock.run(b.acquire('DescribeNetworkInterfaces', 'read'));
  assert.equal(clock.now(), t0, 'a describe asked while the ADD waits goes as demand too');
  assert.equal(b.classOf('grow'), 'grow', 'a top-up asked then does not: it goes beyond the ADD');
  await clock.run(release);
  assert.equal(clock.now() - t0, 30_000, 'until the hold ends');
});

test("releases begin at this agent's turns: one per fleet interval, at a phase of its own", async () => {
  const { clock, fleet, b } = setup(() => 0.75);
  fleet.paceMs.set('UnassignPrivateIpAddresses', 40_000);
  clock.pass(40_000 * 10 - clock.now()); // a turn boundary: phase 0.75 puts the turn 30 s later
  assert.equal(b.releaseTurnInMs(), 30_000);
  clock.pass(30_000);
  assert.equal(b.releaseTurnInMs(), 0, 'its turn is open');
  clock.pass(1000);
  await clock.run(b.acquire('UnassignPrivateIpAddresses', 'release'));
  assert.equal(b.releaseTurnInMs(), 39_000, 'used: the next turn is one interval after this one');
  await clock.run(b.acquire('DeleteNetworkInterface', 'release'));
  assert.equal(b.releaseTurnInMs(), 39_000, 'what finishes a release uses no turn');
  clock.pass(39_000 + 10_000);
  assert.equal(b.releaseTurnInMs(), 30_000, 'a turn not used closes after 10 s');
  const alone = new Ec2Budget({ ceiling: { qps: 10, burst: 20 }, clock, random: () => 0.5 });
  assert.equal(alone.releaseTurnInMs(), 0, 'without the fleet signal a release may begin at any time');
  assert.equal(b.releasesHeld(), undefined);
  fleet.clusterThrottled = true;
  assert.match(b.releasesHeld() ?? '', /throttled the cluster/);
  await assert.rejects(b.acquire('DeleteNetworkInterface', 'release'), { code: 'Ec2ReleaseHeld' });
});

test("a throttle that cuts this agent's lane is told to the fleet, once per round, paced or not", () => {
  const { clock, fleet, b } = setup();
  const sentAt = clock.now();
  clock.pass(10);
  b.answered('AssignPrivateIpAddresses', sentAt, true, 'grow');
  b.answered('AssignPrivateIpAddresses', sentAt, true, 'grow'); // sent before the cut: the same round
  b.answered('CreateNetworkInterface', sentAt, true, 'demand');
  assert.deepEqual(fleet.told, ['AssignPrivateIpAddresses paced', 'CreateNetworkInterface']);
});

test('while the agent starts its calls go as demand: its start is what the pods wait for', async () => {
  const { clock, fleet, b } = setup();
  fleet.paceMs.set('DescribeNetworkInterfaces', 100_000);
  b.starting();
  assert.equal(b.classOf('read'), 'demand');
  assert.equal(b.classOf('release'), 'release');
  const t0 = clock.now();
  for (let i = 0; i < 3; i++) await clock.run(b.acquire('DescribeNetworkInterfaces', b.classOf('read')));
  // 1.5 describe intervals, at most 10 s, drawn once (0.5): nodes replaced together spread their start.
  assert.equal(clock.now() - t0, 5000, 'its start drawn within a short spread, then not paced');
  b.started();
  assert.equal(b.classOf('read'), 'read');
});

test('what finishes an earlier call (attach after create, delete after detach) is not paced', async () => {
  const { clock, fleet, b } = setup();
  for (const a of ['CreateNetworkInterface', 'AttachNetworkInterface']) fleet.paceMs.set(a, 400_000);
  const t0 = clock.now();
  for (let i = 0; i < 3; i++) await clock.run(b.acquire('AttachNetworkInterface', 'grow'));
  assert.equal(clock.now(), t0);
  await clock.run(b.acquire('CreateNetworkInterface', 'grow'));
  await clock.run(b.acquire('CreateNetworkInterface', 'grow'));
  assert.equal(clock.now() - t0, 200_000 + 400_000, 'what begins something is');
});

test('a release waiting out a hold is not sent once the cluster throttles', async () => {
  const { clock, fleet, b } = setup(() => 0.5);
  fleet.heldUntil.set('UnassignPrivateIpAddresses', clock.now() + 5000);
  const release = b.acquire('UnassignPrivateIpAddresses', 'release');
  clock.pass(1000);
  fleet.clusterThrottled = true;
  await assert.rejects(clock.run(release), { code: 'Ec2ReleaseHeld' });
});

test('while an ADD waits, a top-up the pool asks goes as demand: the ADD waits behind it', async () => {
  const { clock, fleet, b } = setup();
  fleet.paceMs.set('CreateNetworkInterface', 400_000);
  let addWaits = true;
  b.watchDemand(() => addWaits);
  const t0 = clock.now();
  await clock.run(b.acquire('CreateNetworkInterface', b.classOf('grow')));
  assert.equal(clock.now(), t0);
  addWaits = false;
  assert.equal(b.classOf('grow'), 'grow');
  assert.equal(b.classOf('release'), 'release');
});

test("a starting agent's calls are not paced but wait out a hold, then a draw within 1.5 intervals, at most 10 s", async () => {
  const { clock, fleet, b } = setup(() => 0.5);
  fleet.paceMs.set('DescribeSubnets', 100_000);
  b.starting();
  assert.equal(fleet.startingNow, true, 'the signal is told, to read the Lease often while the agent starts');
  const t0 = clock.now();
  await clock.run(b.acquire('DescribeSubnets', b.classOf('read')));
  await clock.run(b.acquire('DescribeSubnets', b.classOf('read')));
  assert.equal(clock.now(), t0, 'not paced');
  fleet.heldUntil.set('DescribeSubnets', t0 + 5000);
  await clock.run(b.acquire('DescribeSubnets', b.classOf('read')));
  assert.equal(clock.now() - t0, 5000 + 5000, 'the hold, then half of the 10 s draw');
  // A lone agent (its interval 0.1 s): a throttle of its start costs it the hold, not 10 s more.
  fleet.paceMs.set('DescribeSubnets', 100);
  const t2 = clock.now();
  fleet.heldUntil.set('DescribeSubnets', t2 + 5000);
  await clock.run(b.acquire('DescribeSubnets', b.classOf('read')));
  assert.equal(clock.now() - t2, 5000 + 75, 'the hold, then half of 1.5 intervals');
  const t1 = clock.now();
  await clock.run(b.acquire('AssignPrivateIpAddresses', 'demand'));
  assert.equal(clock.now(), t1, "a pod's call waits for no hold");
  b.started();
  assert.equal(fleet.startingNow, false);
});

test('a turn stays open for longer than a pool pass (5 s): passes every 5 s use every turn', async () => {
  for (const intervalMs of [400, 8000, 12_000]) {
    const { clock, fleet, b } = setup(() => 0.3);
    fleet.paceMs.set('UnassignPrivateIpAddresses', intervalMs);
    clock.pass(intervalMs * 1000 - clock.now());
    const t0 = clock.now();
    let releases = 0;
    for (let pass = 0; pass < 40; pass++) {
      if (b.releaseTurnInMs() === 0) {
        await clock.run(b.acquire('UnassignPrivateIpAddresses', 'release'));
        releases++;
      }
      clock.pass(5000);
    }
    const turns = (clock.now() - t0) / intervalMs;
    // One per turn at most, and (a turn's window being longer than 5 s or the whole interval) no turn missed.
    assert.ok(
      releases <= Math.ceil(turns) + 1 && releases >= Math.min(40, Math.floor(turns) - 1),
      `interval ${intervalMs} ms: ${releases} releases in ${turns.toFixed(1)} turns`,
    );
  }
});
