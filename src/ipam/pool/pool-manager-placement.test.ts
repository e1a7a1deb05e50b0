// The pool manager and ENI placement: new ENIs go where the placer says, custom networking keeps
// the primary ENI's addresses out of the pool, and a placement that cannot be had blocks growth
// with its reason (in the pool's health and in a waiting ADD's error), never falling back.
import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { CloudError } from '../../cloud/cloud.ts';
import { EniPlacementError, type EniPlacer } from '../enis/eni-placement.ts';
import { customNetworkPlacer } from '../enis/eni-placement-custom.ts';
import { discoveredSubnetPlacer, SUBNET_DISCOVERY_TAG } from '../enis/eni-placement-discovery.ts';
import { managerFactory, settle, virtualTime } from '../testing/manager-setup.ts';

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

/** Subnet discovery on the fake cloud, with tagged subnets added by `prepare`; the primary ENI is full. */
async function discoverySetup(subnets: { subnetId: string; free: number }[], createFailures: number) {
  let placer: EniPlacer | undefined;
  const lazy: EniPlacer = {
    primaryEniCarriesPods: true,
    next: () => (placer ?? assert.fail('no placer')).next(),
  };
  const run = await setup({
    primarySecondaryIps: 3,
    prepare: (c) => {
      const base = c.subnets[0]!;
      for (const [i, s] of subnets.entries()) {
        const tags = { [SUBNET_DISCOVERY_TAG]: '' };
        c.subnets.push({
          ...base,
          subnetId: s.subnetId,
          cidr: `10.${9 - i}.0.0/16`,
          availableIpCount: s.free,
          tags,
        });
      }
      placer = discoveredSubnetPlacer(c, c.meta);
      const full = new CloudError('not enough free addresses', 'InsufficientFreeAddressesInSubnet', false);
      c.failNext('createEni', full, createFailures);
    },
    deps: { eniPlacement: lazy },
  });
  // A pod takes one of the primary ENI's three addresses: WARM_ENI_TARGET=1 wants a new ENI.
  assert.ok(run.manager.allocate('vpcnet/p0/eth0'));
  return run;
}

test('subnet discovery: a subnet out of addresses at CreateNetworkInterface makes the same growth attempt try the next candidate, and the log says which failed and why', async () => {
  // DescribeSubnets' count is stale: the subnet with the most free addresses has none left.
  const { cloud, manager, logs } = await discoverySetup(
    [
      { subnetId: 'subnet-most', free: 9000 },
      { subnetId: 'subnet-next', free: 5000 },
    ],
    1,
  );
  assert.equal((await manager.runPass()).kind, 'attachEni');
  const creates = cloud.calls.filter((c) => c.startsWith('createEni'));
  assert.match(creates[0] ?? '', /^createEni subnet-most /);
  assert.match(creates[1] ?? '', /^createEni subnet-next /, 'the next candidate by free addresses');
  assert.equal(manager.enis().find((e) => e.eni?.deviceNumber === 1)?.eni?.subnetId, 'subnet-next');
  assert.ok(
    logs.some(
      (l) =>
        l.startsWith('warn ') &&
        /"subnet":"subnet-most".*InsufficientFreeAddressesInSubnet.*subnet-next/.test(l),
    ),
    logs.join('\n'),
  );
});

test('subnet discovery: when every candidate is out of addresses the error names each subnet and why', async () => {
  const { manager } = await discoverySetup([{ subnetId: 'subnet-most', free: 9000 }], 2);
  await assert.rejects(
    manager.runPass(),
    /subnet subnet-most failed: InsufficientFreeAddressesInSubnet; cannot create an ENI in subnet-1: .*not enough free addresses/,
  );
});
