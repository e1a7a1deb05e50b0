import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { CloudError } from '../../cloud/cloud.ts';
import { INSTANCE_ID_TAG } from '../enis/eni-ownership.ts';
import { managerFactory, secondaryCounts, settle, T0, virtualTime } from '../testing/manager-setup.ts';
import type { PoolObserver } from './pool-parts.ts';

const { setup, stopAll } = managerFactory();
afterEach(async () => {
  await stopAll();
  virtualTime.reset();
});

describe('PoolManager grows the pool', () => {
  test('init rebuilds the pool from the instance ENIs', async () => {
    const { pool, manager } = await setup({
      primarySecondaryIps: 2,
      prepare: (cloud) => {
        cloud.attachForeignEni({ deviceIndex: 1, secondaryIps: 1 });
      },
    });
    assert.deepEqual(
      pool.enis().map((e) => [e.deviceNumber, e.routeTable, pool.addresses(e.eniId).size]),
      [
        [0, 254, 2],
        [1, 2, 1],
      ],
    );
    assert.equal(manager.attachedEniCount(), 2);
  });

  test('WARM_ENI_TARGET=1 fills the primary ENI, then attaches and fills another as pods arrive', async () => {
    const { cloud, pool, manager, attachedHook } = await setup();
    assert.deepEqual(await settle(manager), ['assign 3']);
    assert.deepEqual(secondaryCounts(cloud), [3]);

    assert.ok(manager.allocate('vpcnet/c1/eth0'));
    assert.deepEqual(await settle(manager), ['attachEni', 'assign 3']);
    assert.deepEqual(secondaryCounts(cloud), [3, 3]);
    const [created] = cloud.attached().slice(1);
    assert.ok(created);
    assert.equal(created.subnetId, cloud.meta.subnetId);
    assert.equal(created.attachment?.deviceIndex, 1);
    assert.equal(created.attachment?.deleteOnTermination, true);
    assert.deepEqual(
      attachedHook.map((e) => [e.eniId, e.deviceNumber]),
      [[created.eniId, 1]],
    );
    assert.deepEqual(pool.stats(T0), { total: 6, assigned: 1, cooling: 0, available: 5, enis: 2 });
  });

  test('an ENI vpcnet creates carries the instance-id, created-by and createdAt tags and the description marker', async () => {
    const { cloud, manager } = await setup({ primarySecondaryIps: 3 });
    manager.allocate('vpcnet/c1/eth0');
    await settle(manager);
    const created = cloud.attached()[1];
    assert.equal(created?.description, `vpcnet: node ${cloud.meta.instanceId}`);
    assert.deepEqual(created?.tags, {
      'node.k8s.amazonaws.com/instance_id': cloud.meta.instanceId,
      'vpcnet.io/created-by': 'vpcnet',
      'node.k8s.amazonaws.com/createdAt': new Date(T0).toISOString().replace('.000Z', 'Z'),
    });
    assert.ok(
      cloud.calls.some((c) => c.startsWith('createEni') && c.includes(`${INSTANCE_ID_TAG}=i-0fake`)),
      'tagged at creation, so an ENI whose attach never happened is still found',
    );
    assert.ok(created && manager.enis().find((e) => e.eniId === created.eniId)?.createdByVpcnet);
  });

  test('WARM_IP_TARGET=2 MINIMUM_IP_TARGET=5 grows to exactly five addresses over two ENIs', async () => {
    const { cloud, manager } = await setup({ targets: { warmIpTarget: 2, minimumIpTarget: 5 } });
    assert.deepEqual(await settle(manager), ['assign 3', 'attachEni', 'assign 2']);
    assert.deepEqual(secondaryCounts(cloud), [3, 2]);
  });

  test('stops growing at MAX_ENI', async () => {
    const { cloud, manager } = await setup({ targets: { maxEni: 2 } });
    for (let i = 0; i < 6; i++) {
      await settle(manager);
      assert.ok(manager.allocate(`vpcnet/c${i}/eth0`));
    }
    assert.deepEqual(await settle(manager), []);
    assert.equal(manager.allocate('vpcnet/c6/eth0'), undefined);
    assert.equal(cloud.attached().length, 2);
    assert.equal(cloud.calls.filter((c) => c.startsWith('createEni')).length, 1);
  });

  test('WARM_IP_TARGET releases excess free addresses, never an assigned or cooling one', async () => {
    const { cloud, pool, manager, clock } = await setup({
      primarySecondaryIps: 3,
      targets: { warmIpTarget: 1 },
    });
    const held = manager.allocate('vpcnet/a/eth0');
    const freed = manager.allocate('vpcnet/b/eth0');
    assert.ok(held && freed);
    manager.release(freed.ip);
    assert.deepEqual(await settle(manager), []);
    assert.deepEqual(pool.stats(clock.now()), { total: 3, assigned: 1, cooling: 1, available: 1, enis: 1 });

    clock.t += 30_000;
    assert.deepEqual(await settle(manager), ['release 1']);
    const left = cloud.attached()[0]?.secondaryIps ?? [];
    assert.equal(left.length, 2);
    assert.ok(left.includes(held.ip), 'the assigned address stays');
    assert.deepEqual(pool.state(held.ip), { kind: 'assigned', owner: 'vpcnet/a/eth0' });
  });

  test('shrinking skips an address still cooling even when it comes first', async () => {
    const { cloud, manager, clock } = await setup({
      primarySecondaryIps: 3,
      targets: { warmIpTarget: 0, minimumIpTarget: 1 },
    });
    const [a, b, c] = ['a', 'b', 'c'].map((o) => manager.allocate(`vpcnet/${o}/eth0`)?.ip ?? '');
    manager.release(c ?? '');
    clock.t += 10_000;
    manager.release(b ?? '');
    clock.t += 20_000; // c's cooldown has ended, b's has not
    assert.deepEqual(await settle(manager), ['release 1']);
    assert.deepEqual(cloud.attached()[0]?.secondaryIps, [a, b]);
  });

  test('an ENI that fails to attach is deleted, with an error naming it and the device index', async () => {
    const { cloud, manager } = await setup();
    await settle(manager);
    manager.allocate('vpcnet/c1/eth0');
    cloud.failNext(
      'attachEni',
      new CloudError('Interface count exceeds the limit', 'AttachmentLimitExceeded', false),
    );
    await assert.rejects(
      manager.runPass(),
      /^Error: cannot attach ENI eni-0001 at device index 1: AttachmentLimitExceeded: Interface count exceeds the limit$/,
    );
    assert.ok(cloud.calls.includes('deleteEni eni-0001'));
    assert.equal(cloud.enis.has('eni-0001'), false, 'nothing leaks');
    assert.deepEqual(await settle(manager), ['attachEni', 'assign 3'], 'the next pass tries again');
  });

  test('an ENI that failed to attach and to delete is deleted by a later pass, and holds no device slot', async () => {
    const { cloud, manager } = await setup({ primarySecondaryIps: 3 });
    manager.allocate('vpcnet/c1/eth0');
    cloud.failNext('attachEni');
    cloud.failNext('deleteEni');
    await assert.rejects(manager.runPass(), /cannot attach ENI eni-0001/);
    assert.deepEqual(manager.pendingEniDeletes(), ['eni-0001']);
    assert.equal(manager.attachedEniCount(), 1);
    assert.deepEqual(await settle(manager), ['attachEni', 'assign 3']);
    assert.equal(cloud.enis.has('eni-0001'), false);
    assert.deepEqual(manager.pendingEniDeletes(), []);
  });

  test('a release EC2 did not apply (throttled) puts the addresses back in the pool', async () => {
    const { cloud, pool, manager } = await setup({ primarySecondaryIps: 3, targets: { warmIpTarget: 1 } });
    cloud.failNext('unassignPrivateIps');
    await assert.rejects(
      manager.runPass(),
      /cannot release 2 addresses of ENI eni-primary: RequestLimitExceeded/,
    );
    assert.equal(pool.stats(0).available, 3);
    assert.deepEqual(await settle(manager), ['release 2']);
  });

  test('a release whose outcome is unknown (5xx, or "not assigned" on a retry) holds the addresses back: counted, never lent', async () => {
    for (const error of [
      new CloudError('unassign: InternalError', 'InternalError', true),
      new CloudError('unassign: not assigned', 'InvalidParameterValue', false),
    ]) {
      const { cloud, pool, manager } = await setup({ primarySecondaryIps: 3, targets: { warmIpTarget: 1 } });
      cloud.failNext('unassignPrivateIps', error);
      await assert.rejects(manager.runPass(), /cannot release 2 addresses of ENI eni-primary/);
      // Never lent while EC2 may no longer have them: only the one kept address is available. They
      // still count on the ENI, so that no top-up asks EC2 for more than the ENI may hold.
      assert.equal(pool.stats(0).available, 1, error.code);
      assert.equal(pool.stats(0).unconfirmed, 2, error.code);
      assert.equal(pool.stats(0).total, 3, error.code);
      assert.equal(manager.allocate('vpcnet/c1/eth0') !== undefined, true);
      assert.equal(manager.allocate('vpcnet/c2/eth0'), undefined, error.code);
    }
  });

  test('an ENI whose link cannot be configured gives no addresses until the hook succeeds', async () => {
    let hookFails = true;
    const { cloud, pool, manager } = await setup({
      primarySecondaryIps: 3,
      deps: {
        onEniAttached: async () => {
          if (hookFails) throw new Error('link not found');
        },
      },
    });
    manager.allocate('vpcnet/c1/eth0');
    await assert.rejects(
      manager.runPass(),
      /attached at device 1 but its link is not configured: link not found/,
    );
    assert.equal(pool.enis().length, 1);
    assert.equal(manager.attachedEniCount(), 2);
    assert.deepEqual(
      manager.enis().map((e) => [e.eniId, e.state]),
      [
        ['eni-primary', 'ready'],
        ['eni-0001', 'configuring'],
      ],
    );
    await assert.rejects(manager.runPass(), /link not found/);
    assert.equal(cloud.calls.filter((c) => c.startsWith('createEni')).length, 1, 'no second ENI meanwhile');
    hookFails = false;
    assert.deepEqual(await settle(manager), ['assign 3']);
    assert.equal(pool.enis().length, 2);
  });

  test('DeleteOnTermination is retried until it sticks', async () => {
    const { cloud, manager } = await setup({ primarySecondaryIps: 3 });
    manager.allocate('vpcnet/c1/eth0');
    cloud.failNext('setDeleteOnTermination');
    assert.deepEqual(await settle(manager), ['attachEni', 'assign 3']);
    assert.equal(cloud.attached()[1]?.attachment?.deleteOnTermination, true);
    assert.equal(manager.enis()[1]?.deleteOnTerminationPending, false);
  });

  test('concurrent passes do not attach two ENIs for one need', async () => {
    const { cloud, manager } = await setup({ primarySecondaryIps: 3 });
    manager.allocate('vpcnet/c1/eth0');
    const results = await Promise.all([manager.runPass(), manager.runPass()]);
    assert.deepEqual(
      results.map((r) => r.kind),
      ['attachEni', 'assign'],
    );
    assert.equal(cloud.attached().length, 2);
  });
});

describe('what the pool manager tells its observer', () => {
  function recording(): { events: string[]; observer: PoolObserver } {
    const events: string[] = [];
    return {
      events,
      observer: {
        actionStarted: (action) => {
          events.push(`start ${action}`);
          return () => events.push(`end ${action}`);
        },
        eniLeftOver: (eniId, err) =>
          events.push(`left over ${eniId}: ${err instanceof CloudError ? err.code : String(err)}`),
      },
    };
  }

  test('a pass that shrinks or grows the pool, and an EC2 sync, each run as one action that ends', async () => {
    const { events, observer } = recording();
    const { manager } = await setup({
      primarySecondaryIps: 3,
      targets: { warmIpTarget: 1 },
      deps: { observer },
    });
    assert.deepEqual(await settle(manager), ['release 2']);
    assert.deepEqual(
      events.splice(0),
      ['start shrink', 'end shrink'],
      'the last pass, with nothing to do, is no action',
    );
    manager.allocate('vpcnet/a/eth0');
    assert.deepEqual(await settle(manager), ['assign 1']);
    assert.deepEqual(events.splice(0), ['start grow', 'end grow']);
    await manager.syncWithCloud();
    assert.deepEqual(events.splice(0), ['start ec2Sync', 'end ec2Sync']);
  });

  test('a grow that fails still ends its action; an ENI neither attached nor deleted is reported left over', async () => {
    const { events, observer } = recording();
    const { cloud, manager } = await setup({ primarySecondaryIps: 3, deps: { observer } });
    manager.allocate('vpcnet/c1/eth0');
    cloud.failNext('attachEni');
    cloud.failNext('deleteEni', new CloudError('not now', 'InvalidNetworkInterface.InUse', false));
    await assert.rejects(manager.runPass(), /cannot attach ENI eni-0001/);
    assert.deepEqual(events, ['start grow', 'left over eni-0001: InvalidNetworkInterface.InUse', 'end grow']);
  });
});

describe('PoolManager background loop (virtual time)', () => {
  test('a throttled pass is retried after 5, 10, then 20 ms (the cap), and the pool reaches its target', async () => {
    virtualTime.enable();
    const { cloud, pool, manager, logs } = await setup();
    const callTimes: number[] = [];
    const assign = cloud.assignPrivateIps.bind(cloud);
    cloud.assignPrivateIps = (eniId, count) => {
      callTimes.push(Date.now());
      return assign(eniId, count);
    };
    cloud.failNext('assignPrivateIps', undefined, 3);
    manager.start();
    await virtualTime.until('pool filled', () => pool.stats(0).total === 3);
    assert.deepEqual(
      callTimes.slice(1).map((t, i) => t - (callTimes[i] ?? 0)),
      [5, 10, 20],
    );
    assert.equal(logs.filter((l) => l.startsWith('error address pool pass failed')).length, 3);
    assert.match(logs.find((l) => l.startsWith('error')) ?? '', /RequestLimitExceeded/);
  });

  test('an allocation that drops below the target runs a pass at once, not after the 60 s interval', async () => {
    virtualTime.enable();
    const { cloud, manager } = await setup({ primarySecondaryIps: 3, deps: { intervalMs: 60_000 } });
    manager.start();
    await virtualTime.advance(1);
    assert.deepEqual(secondaryCounts(cloud), [3], 'the first pass found nothing to do');
    manager.allocate('vpcnet/c1/eth0');
    const took = await virtualTime.until(
      'second ENI filled',
      () => secondaryCounts(cloud).join() === '3,3',
      5,
    );
    assert.equal(took, 0, 'the same virtual instant');
  });

  test('waitForAddress resolves once the pool has grown', async () => {
    virtualTime.enable();
    const { manager } = await setup({ primarySecondaryIps: 3, targets: { warmEniTarget: 0 } });
    for (let i = 0; i < 3; i++) assert.ok(manager.allocate(`vpcnet/c${i}/eth0`));
    assert.equal(manager.allocate('vpcnet/c3/eth0'), undefined);
    manager.start();
    let resolved = false;
    void manager.waitForAddress(2000).then(() => {
      resolved = true;
    });
    await virtualTime.until('waiter woken', () => resolved, 100);
    assert.equal(manager.allocate('vpcnet/c3/eth0')?.eni.deviceNumber, 1);
  });

  test('waitForAddress resolves when a cooldown ends', async () => {
    virtualTime.enable();
    const { manager, clock } = await setup({ primarySecondaryIps: 1, limits: { maxEnis: 1, ipsPerEni: 2 } });
    const got = manager.allocate('vpcnet/a/eth0');
    assert.ok(got);
    manager.release(got.ip);
    manager.start();
    let resolved = false;
    void manager.waitForAddress(60_000).then(() => {
      resolved = true;
    });
    await virtualTime.advance(20);
    assert.equal(resolved, false, 'still cooling');
    clock.t += 30_000;
    await virtualTime.until('waiter woken', () => resolved, 100);
    assert.equal(manager.allocate('vpcnet/b/eth0')?.ip, got.ip);
  });

  test('waitForAddress rejects exactly at its deadline at the limits, with an error naming them', async () => {
    virtualTime.enable();
    const { manager } = await setup({ primarySecondaryIps: 3, limits: { maxEnis: 1, ipsPerEni: 4 } });
    for (let i = 0; i < 3; i++) manager.allocate(`vpcnet/c${i}/eth0`);
    manager.release(manager.allocate('vpcnet/c0/eth0')?.ip ?? '');
    manager.start();
    let outcome: unknown;
    manager.waitForAddress(50).catch((err: unknown) => {
      outcome = err;
    });
    await virtualTime.advance(49);
    assert.equal(outcome, undefined, 'not before the deadline');
    await virtualTime.advance(1);
    assert.match(
      String(outcome),
      /^PoolExhaustedError: no free address after 50 ms: 1\/1 ENIs × 3 secondary IPs, 2 in use, 1 cooling; the pool is at its limits$/,
    );
  });

  test('waitForAddress names the last cloud error when growth keeps failing', async () => {
    virtualTime.enable();
    const { cloud, manager } = await setup({
      primarySecondaryIps: 1,
      limits: { maxEnis: 3, ipsPerEni: 2 },
      targets: { warmEniTarget: 0 },
    });
    manager.allocate('vpcnet/a/eth0');
    cloud.failNext(
      'createEni',
      new CloudError('not enough free addresses', 'InsufficientFreeAddressesInSubnet', false),
      100,
    );
    manager.start();
    let outcome: unknown;
    manager.waitForAddress(60).catch((err: unknown) => {
      outcome = err;
    });
    await virtualTime.advance(60);
    assert.match(
      String(outcome),
      /last pool error: cannot create an ENI in subnet-1: InsufficientFreeAddressesInSubnet/,
    );
  });

  test('stop rejects waiting ADDs and no pass runs after it', async () => {
    virtualTime.enable();
    const { cloud, manager } = await setup({ primarySecondaryIps: 1, limits: { maxEnis: 1, ipsPerEni: 2 } });
    manager.allocate('vpcnet/a/eth0');
    manager.start();
    await virtualTime.advance(1);
    const waiting = manager.waitForAddress(1000);
    await manager.stop();
    await assert.rejects(waiting, /the agent is stopping/);
    const calls = cloud.calls.length;
    await virtualTime.advance(100);
    assert.equal(cloud.calls.length, calls);
  });
});
