// Which ENIs the manager takes on (at init and when it looks again), which it leaves alone, and
// which primary IPs it protects from the reconcile loop's collection.

import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { Ledger } from '../../ledger/ledger.ts';
import { MemoryLedgerStore } from '../../ledger/testing/memory-store.ts';
import {
  attachedDevices,
  attachmentFor,
  burst,
  managerFactory,
  settle,
  T0,
} from '../testing/manager-setup.ts';
import { MIN_ENI_LIFETIME_MS } from './eni-registry.ts';

const { setup, stopAll } = managerFactory();
afterEach(() => stopAll());

describe('unmanaged ENIs', () => {
  test('a trunk, an EFA and an ENI tagged no_manage=true lend no address but occupy device slots', async () => {
    const { pool, manager, cloud } = await setup({
      primarySecondaryIps: 1,
      limits: { maxEnis: 5, ipsPerEni: 4 },
      prepare: (cloud) => {
        cloud.attachForeignEni({ deviceIndex: 1, interfaceType: 'trunk' });
        cloud.attachForeignEni({ deviceIndex: 2, interfaceType: 'efa', secondaryIps: 2 });
        cloud.attachForeignEni({
          deviceIndex: 3,
          tags: { 'node.k8s.amazonaws.com/no_manage': 'true' },
          secondaryIps: 2,
        });
      },
    });
    assert.deepEqual(
      pool.enis().map((e) => e.eniId),
      ['eni-primary'],
    );
    assert.equal(manager.attachedEniCount(), 4);
    assert.deepEqual(
      manager.enis().map((e) => [e.eniId, e.state, e.unmanagedReason]),
      [
        ['eni-primary', 'ready', undefined],
        ['eni-0001', 'unmanaged', 'interface type trunk'],
        ['eni-0002', 'unmanaged', 'interface type efa'],
        ['eni-0003', 'unmanaged', 'tagged node.k8s.amazonaws.com/no_manage=true'],
      ],
    );
    // Growth picks the first free device index past them and never touches their addresses.
    manager.allocate('vpcnet/a/eth0');
    await settle(manager);
    assert.deepEqual(attachedDevices(cloud), [0, 1, 2, 3, 4]);
    assert.deepEqual(
      new Set(cloud.calls.filter((c) => /^(assign|unassign)PrivateIps/.test(c)).map((c) => c.split(' ')[1])),
      new Set(['eni-primary', 'eni-0004']),
    );
  });

  test('no_manage with another value than "true" does not opt the ENI out', async () => {
    const { pool } = await setup({
      prepare: (cloud) => {
        cloud.attachForeignEni({ deviceIndex: 1, tags: { 'node.k8s.amazonaws.com/no_manage': 'false' } });
      },
    });
    assert.deepEqual(
      pool.enis().map((e) => e.deviceNumber),
      [0, 1],
    );
  });

  test('trunkEni() is the attached trunk, and undefined without one', async () => {
    const without = await setup();
    assert.equal(without.manager.trunkEni(), undefined);
    const { manager } = await setup({
      prepare: (cloud) => {
        cloud.attachForeignEni({ deviceIndex: 1, interfaceType: 'trunk', tags: { owner: 'vpc-rc' } });
      },
    });
    assert.deepEqual(
      [manager.trunkEni()?.eniId, manager.trunkEni()?.interfaceType, manager.trunkEni()?.deviceNumber],
      ['eni-0001', 'trunk', 1],
    );
  });
});

describe('refreshEnis', () => {
  test('a trunk attached after start is found, reported and left alone', async () => {
    const { manager, cloud, pool, logs } = await setup({ primarySecondaryIps: 3 });
    assert.equal(manager.trunkEni(), undefined);
    const trunkId = cloud.attachForeignEni({ deviceIndex: 1, interfaceType: 'trunk' });
    const found = await manager.refreshEnis();
    assert.deepEqual(
      found.map((e) => e.eniId),
      [trunkId],
    );
    assert.equal(manager.trunkEni()?.eniId, trunkId);
    assert.equal(pool.eni(trunkId), undefined);
    assert.equal(manager.attachedEniCount(), 2);
    assert.ok(logs.some((l) => l.includes('ENI not managed by vpcnet') && l.includes(trunkId)));
    assert.deepEqual(await manager.refreshEnis(), [], 'found once');
  });

  test('a regular ENI someone attached after start has its link configured and joins the pool; it is never freed', async () => {
    const { manager, cloud, pool, attachedHook, clock } = await setup({
      primarySecondaryIps: 3,
      targets: { warmIpTarget: 1 },
      limits: { maxEnis: 3, ipsPerEni: 4 },
    });
    const id = cloud.attachForeignEni({ deviceIndex: 1, secondaryIps: 2 });
    const found = await manager.refreshEnis();
    assert.deepEqual(
      found.map((e) => e.eniId),
      [id],
    );
    assert.deepEqual(
      attachedHook.map((e) => e.eniId),
      [id],
    );
    assert.equal(pool.addresses(id).size, 2);
    clock.t += 60_000;
    await settle(manager);
    assert.ok(attachedDevices(cloud).includes(1), 'not created by vpcnet: never detached');
  });

  test('a new ENI whose link set-up fails stays configuring and a pass configures it later', async () => {
    let fail = true;
    const { manager, cloud, pool } = await setup({
      primarySecondaryIps: 3,
      deps: {
        onEniAttached: async () => {
          if (fail) throw new Error('no such link');
        },
      },
    });
    const id = cloud.attachForeignEni({ deviceIndex: 1, secondaryIps: 3 });
    await manager.refreshEnis();
    assert.equal(manager.enis()[1]?.state, 'configuring');
    assert.equal(pool.eni(id), undefined);
    fail = false;
    await manager.runPass();
    assert.equal(pool.addresses(id).size, 3);
  });

  test('an ENI a stale describe at start missed joins later with the ledger’s assignment applied: a held address is never lent', async () => {
    const ledger = await Ledger.open(new MemoryLedgerStore(), { now: () => T0 });
    let heldIp = '';
    const { manager, cloud, pool } = await setup({
      primarySecondaryIps: 0,
      targets: { warmEniTarget: 0 },
      deps: { ledger },
      prepare: (cloud) => {
        const id = cloud.attachForeignEni({ deviceIndex: 1, secondaryIps: 2 });
        heldIp = cloud.enis.get(id)?.secondaryIps[0] ?? '';
        ledger.put(attachmentFor('pod', heldIp, id));
        // The describe at start is stale: it does not list the ENI yet.
        const describe = cloud.describeInstanceEnis.bind(cloud);
        cloud.describeInstanceEnis = async (instanceId) => {
          cloud.describeInstanceEnis = describe;
          return (await describe(instanceId)).filter((e) => e.eniId !== id);
        };
      },
    });
    assert.equal(pool.state(heldIp), undefined, 'missed at start');
    await manager.refreshEnis();
    assert.deepEqual(pool.state(heldIp), { kind: 'assigned', owner: 'vpcnet/pod/eth0' });
    const lent = [manager.allocate('vpcnet/a/eth0')?.ip, manager.allocate('vpcnet/b/eth0')?.ip];
    assert.ok(!lent.includes(heldIp), `${heldIp} lent twice`);
    assert.equal(cloud.attached().length, 2);
  });

  test('an ENI vpcnet deleted is not taken back when a stale describe still lists it', async () => {
    const { manager, cloud, clock } = await setup({ targets: { warmIpTarget: 1 } });
    for (const ip of await burst(manager, 4)) manager.release(ip);
    const staleView = await cloud.describeInstanceEnis(cloud.meta.instanceId);
    clock.t += MIN_ENI_LIFETIME_MS; // cooldowns ended, and the ENIs are past their first minute
    await settle(manager);
    assert.deepEqual(attachedDevices(cloud), [0]);
    cloud.describeInstanceEnis = async () => staleView;
    assert.deepEqual(await manager.refreshEnis(), []);
    assert.deepEqual(
      manager.enis().map((e) => e.eniId),
      ['eni-primary'],
    );
  });
});

describe('protectedAddresses', () => {
  test('names the primary IPs of ENIs configuring, ready or detaching; not unmanaged or detached ones', async () => {
    let duringSetup: Set<string> | undefined;
    let duringTeardown: Set<string> | undefined;
    const { manager, cloud, clock } = await setup({
      targets: { warmIpTarget: 1 },
      prepare: (cloud) => {
        cloud.attachForeignEni({ deviceIndex: 2, interfaceType: 'trunk' });
      },
      deps: {
        onEniAttached: async () => {
          duringSetup = manager.protectedAddresses();
        },
        onEniDetaching: async () => {
          duringTeardown = manager.protectedAddresses();
        },
      },
    });
    const primaryIp = (device: number) =>
      cloud.attached().find((e) => e.attachment?.deviceIndex === device)?.primaryIp ?? '';
    const trunkIp = primaryIp(2);
    assert.deepEqual(manager.protectedAddresses(), new Set([cloud.meta.primaryIp]));

    const ips = await burst(manager, 4);
    const eni1Ip = primaryIp(1);
    assert.ok(duringSetup?.has(eni1Ip), 'protected before its rule exists');
    assert.deepEqual(manager.protectedAddresses(), new Set([cloud.meta.primaryIp, eni1Ip]));
    assert.ok(!manager.protectedAddresses().has(trunkIp), 'vpcnet configured nothing for the trunk');

    for (const ip of ips) manager.release(ip);
    clock.t += MIN_ENI_LIFETIME_MS; // cooldowns ended, and the ENIs are past their first minute
    await settle(manager);
    assert.ok(duringTeardown?.has(eni1Ip), 'still protected while its rule is torn down');
    assert.deepEqual(manager.protectedAddresses(), new Set([cloud.meta.primaryIp]), 'detached: released');
  });
});

describe('init with configureLinks', () => {
  test('every managed ENI goes through its link set-up before its addresses enter the pool', async () => {
    const { manager, attachedHook, attachedWhileInPool } = await setup({
      configureLinks: true,
      primarySecondaryIps: 1,
      prepare: (cloud) => {
        cloud.attachForeignEni({ deviceIndex: 1, secondaryIps: 1 });
        cloud.attachForeignEni({ deviceIndex: 2, interfaceType: 'trunk' });
      },
    });
    assert.deepEqual(
      attachedHook.map((e) => e.deviceNumber),
      [0, 1],
      'the trunk is not configured',
    );
    assert.deepEqual(attachedWhileInPool, [false, false]);
    assert.deepEqual(
      manager.enis().map((e) => e.state),
      ['ready', 'ready', 'unmanaged'],
    );
  });

  test('a link that cannot be set up at init fails init, naming the ENI', async () => {
    await assert.rejects(
      setup({
        configureLinks: true,
        prepare: (cloud) => {
          cloud.attachForeignEni({ deviceIndex: 1 });
        },
        deps: {
          onEniAttached: async (eni) => {
            if (eni.deviceNumber === 1) throw new Error('no link with that MAC');
          },
        },
      }),
      /ENI eni-0001 is attached at device 1 but its link is not configured: no link with that MAC/,
    );
  });
});
