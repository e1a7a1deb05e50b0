import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { managerFactory, T0, virtualTime } from '../testing/manager-setup.ts';

const { setup, stopAll } = managerFactory();
afterEach(async () => {
  await stopAll();
  virtualTime.reset();
});

test('while EC2 fails, ADDs are served from the warm pool and the pool says why it cannot grow; a pass that succeeds clears it', async () => {
  virtualTime.enable();
  const { cloud, manager, logs } = await setup({ primarySecondaryIps: 1, deps: { syncIntervalMs: 60_000 } });
  cloud.failNext('assignPrivateIps', undefined, 3);
  manager.start();
  await virtualTime.until(
    'two failed passes',
    () => manager.health().growth.blocked !== null && logs.length > 2,
  );
  const blocked = manager.health().growth;
  assert.ok(blocked.blocked !== null);
  assert.match(blocked.blocked, /RequestLimitExceeded/);
  assert.equal(blocked.since, T0, 'since the first failure, on the manager clock');
  assert.ok(manager.allocate('vpcnet/c1/eth0'), 'the warm pool still serves an ADD');
  assert.equal(
    logs.filter((l) => l.includes('address pool cannot grow')).length,
    1,
    'said once, not per retry',
  );
  await virtualTime.until('a pass succeeds', () => manager.health().growth.blocked === null);
  assert.ok(logs.some((l) => l.includes('address pool can grow again') && l.includes('"failures":3')));
});

test('a failed pool mutation makes the sync look at EC2 soon, not after its period', async () => {
  virtualTime.enable();
  const { cloud, manager } = await setup({ primarySecondaryIps: 1, deps: { syncIntervalMs: 60_000 } });
  cloud.failNext('assignPrivateIps');
  const describesBefore = cloud.calls.filter((c) => c.startsWith('describeInstanceEnis')).length;
  manager.start();
  const took = await virtualTime.until(
    'the sync described the ENIs',
    () => manager.health().sync.passes === 1,
  );
  assert.ok(took < 1000, `took ${took} virtual ms`);
  assert.equal(cloud.calls.filter((c) => c.startsWith('describeInstanceEnis')).length, describesBefore + 1);
});

test('without failures the sync runs once per period', async () => {
  virtualTime.enable();
  const { manager } = await setup({ primarySecondaryIps: 3, deps: { syncIntervalMs: 600 } });
  manager.start();
  await virtualTime.advance(599);
  assert.equal(manager.health().sync.passes, 0);
  await virtualTime.advance(1);
  assert.equal(manager.health().sync.passes, 1);
  await virtualTime.advance(600);
  assert.equal(manager.health().sync.passes, 2);
});
