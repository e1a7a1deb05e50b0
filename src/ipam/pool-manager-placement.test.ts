// The pool manager and ENI placement: new ENIs go where the placer says, custom networking keeps
// the primary ENI's addresses out of the pool, and a placement that cannot be had blocks growth
// with its reason (in the pool's health and in a waiting ADD's error), never falling back.
import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { EniPlacementError, type EniPlacer } from './eni-placement.ts';
import { customNetworkPlacer } from './eni-placement-custom.ts';
import { managerFactory, settle, virtualTime } from './testing/manager-setup.ts';

const { setup, stopAll } = managerFactory();
afterEach(async () => {
  await stopAll();
  virtualTime.reset();
});

test("custom networking: pods get addresses of an ENI in the ENIConfig's subnet, never the primary ENI's", async () => {
  // The placer needs the fake cloud, which setup builds: prepare() hands it over.
  let placer: EniPlacer | undefined;
  const lazy: EniPlacer = {
    primaryEniCarriesPods: false,
    next: () => (placer ?? assert.fail('no placer')).next(),
  };
  const { cloud, pool, manager } = await setup({
    primarySecondaryIps: 2,
    prepare: (c) => {
      c.subnets.push({
        ...c.subnets[0]!,
        subnetId: 'subnet-pods',
        cidr: '100.64.0.0/16',
        availableIpCount: 60000,
      });
      placer = customNetworkPlacer(c, c.meta, {
        current: () =>
          Promise.resolve({
            name: 'az-a',
            chosenBy: 'test',
            subnetId: 'subnet-pods',
            securityGroupIds: ['sg-pods'],
          }),
      });
    },
    deps: { eniPlacement: lazy },
  });
  assert.deepEqual(pool.enis(), [], "the primary ENI's addresses stay out of the pool");
  assert.deepEqual(
    manager.enis().map((e) => [e.eniId, e.state]),
    [['eni-primary', 'unmanaged']],
  );
  await settle(manager);
  const got = manager.allocate('vpcnet/p1/eth0');
  assert.ok(got);
  assert.equal(got.eni.deviceNumber, 1);
  assert.equal(got.eni.subnetId, 'subnet-pods');
  assert.equal(got.eni.subnetCidr, '100.64.0.0/16');
  assert.match(cloud.calls.find((c) => c.startsWith('createEni')) ?? '', /^createEni subnet-pods sg-pods /);
  assert.equal(cloud.calls.filter((c) => c.startsWith('assignPrivateIps eni-primary')).length, 0);
});

test('a placement that cannot be had blocks growth with its reason, and a waiting ADD fails naming it', async () => {
  virtualTime.enable();
  const failing: EniPlacer = {
    primaryEniCarriesPods: false,
    next: () =>
      Promise.reject(new EniPlacementError('custom networking: ENIConfig default (test) does not exist')),
  };
  const { cloud, manager } = await setup({ deps: { eniPlacement: failing } });
  manager.start();
  let outcome: unknown;
  manager.waitForAddress(60).catch((err: unknown) => {
    outcome = err;
  });
  await virtualTime.advance(60);
  assert.match(
    String(outcome),
    /last pool error: custom networking: ENIConfig default \(test\) does not exist/,
  );
  const growth = manager.health().growth;
  assert.ok(growth.blocked !== null && /ENIConfig default \(test\) does not exist/.test(growth.blocked));
  assert.equal(cloud.calls.filter((c) => c.startsWith('createEni')).length, 0, 'no ENI in a fallback subnet');
});
