import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { CloudError } from '../../cloud/cloud.ts';
import { Ledger } from '../../ledger/ledger.ts';
import { MemoryLedgerStore } from '../../ledger/testing/memory-store.ts';
import { MIN_ENI_LIFETIME_MS } from '../enis/eni-registry.ts';
import {
  attachedDevices,
  attachmentFor,
  burst,
  managerFactory,
  secondaryCounts,
  settle,
  virtualTime,
} from '../testing/manager-setup.ts';

const { setup, stopAll } = managerFactory();
afterEach(async () => {
  await stopAll();
  virtualTime.reset();
});

describe('PoolManager frees idle ENIs', () => {
  test('after a burst to 3 ENIs and every pod gone, idle ENIs are detached and deleted down to the target once cooldowns end, never the primary', async () => {
    const { cloud, pool, manager, clock, detachingHook } = await setup({ targets: { warmIpTarget: 1 } });
    const ips = await burst(manager, 7);
    assert.deepEqual(attachedDevices(cloud), [0, 1, 2]);
    for (const ip of ips) manager.release(ip);

    assert.deepEqual(await settle(manager), [], 'cooling addresses keep every ENI');
    assert.deepEqual(attachedDevices(cloud), [0, 1, 2]);

    clock.t += MIN_ENI_LIFETIME_MS; // cooldowns ended, and the ENIs are past their first minute
    assert.deepEqual(await settle(manager), ['freeEni', 'freeEni', 'release 2']);
    assert.deepEqual(attachedDevices(cloud), [0]);
    assert.deepEqual([...cloud.enis.keys()], ['eni-primary'], 'the freed ENIs are deleted, not left over');
    assert.deepEqual(
      cloud.calls.filter((c) => /^(detachEni|deleteEni)/.test(c)),
      ['detachEni attach-eni-0002', 'deleteEni eni-0002', 'detachEni attach-eni-0001', 'deleteEni eni-0001'],
      'the highest device first; each deleted right after its detach',
    );
    assert.deepEqual(
      detachingHook.map((h) => [h.eni.eniId, h.eni.deviceNumber, h.inPool]),
      [
        ['eni-0002', 2, false],
        ['eni-0001', 1, false],
      ],
      'the link is torn down after the ENI left the pool, before the detach',
    );
    assert.deepEqual(
      manager.enis().map((e) => [e.eniId, e.state]),
      [['eni-primary', 'ready']],
      'deleted ENIs leave the registry',
    );
    assert.deepEqual(pool.stats(clock.now()), { total: 1, assigned: 0, cooling: 0, available: 1, enis: 1 });
    assert.deepEqual(await settle(manager), []);
  });

  test('an ENI that a ledger attachment names is never freed, even when the pool shows it idle', async () => {
    const ledger = await Ledger.open(new MemoryLedgerStore(), { now: () => 0 });
    const { cloud, manager, clock } = await setup({ targets: { warmIpTarget: 1 }, deps: { ledger } });
    const ips = await burst(manager, 7);
    const onDevice2 = ips.find(
      (ip) => cloud.attached().find((e) => e.secondaryIps.includes(ip))?.attachment?.deviceIndex === 2,
    );
    const eni2 = cloud.attached().find((e) => e.attachment?.deviceIndex === 2)?.eniId ?? '';
    // The pool lost track of this pod's address (as after a stale read), but the ledger has it.
    ledger.put(attachmentFor('p', onDevice2 ?? '', eni2));
    for (const ip of ips) manager.release(ip);
    clock.t += MIN_ENI_LIFETIME_MS; // cooldowns ended, and the ENIs are past their first minute
    await settle(manager);
    assert.ok(attachedDevices(cloud).includes(2), 'the ENI a live attachment uses was detached');
  });

  test('an ENI attached less than a minute ago is not freed, even idle with its cooldowns over', async () => {
    const { cloud, manager, clock } = await setup({ targets: { warmIpTarget: 1 } });
    const ips = await burst(manager, 7);
    const attachedAt = clock.t;
    for (const ip of ips) manager.release(ip);
    clock.t += 30_000; // every cooldown has ended
    assert.ok(!(await settle(manager)).includes('freeEni'), 'excess addresses may go, no ENI');
    assert.deepEqual(attachedDevices(cloud), [0, 1, 2]);
    clock.t = attachedAt + MIN_ENI_LIFETIME_MS - 1;
    assert.ok(!(await settle(manager)).includes('freeEni'));
    assert.deepEqual(attachedDevices(cloud), [0, 1, 2]);
    clock.t = attachedAt + MIN_ENI_LIFETIME_MS;
    assert.deepEqual(await settle(manager), ['freeEni', 'freeEni']);
    assert.deepEqual(attachedDevices(cloud), [0]);
  });

  test('WARM_ENI_TARGET=1 keeps one ENI’s worth of addresses and frees the rest', async () => {
    const { cloud, manager, clock } = await setup();
    const ips = await burst(manager, 7);
    assert.deepEqual(attachedDevices(cloud), [0, 1, 2]);
    for (const ip of ips) manager.release(ip);
    clock.t += MIN_ENI_LIFETIME_MS; // cooldowns ended, and the ENIs are past their first minute
    assert.deepEqual(await settle(manager), ['freeEni', 'freeEni']);
    assert.deepEqual(secondaryCounts(cloud), [3]);
  });

  test('an ENI with an assigned or a cooling address is never freed', async () => {
    const { cloud, pool, manager, clock } = await setup({ targets: { warmIpTarget: 1 } });
    const ips = await burst(manager, 7);
    const device = (ip: string) =>
      cloud.attached().find((e) => e.secondaryIps.includes(ip))?.attachment?.deviceIndex;
    const keep = ips.find((ip) => device(ip) === 1) ?? '';
    const late = ips.find((ip) => device(ip) === 2) ?? '';
    clock.t += MIN_ENI_LIFETIME_MS; // past the young-ENI rule: only the addresses keep the ENIs
    for (const ip of ips) if (ip !== keep && ip !== late) manager.release(ip);
    clock.t += 20_000;
    manager.release(late);
    clock.t += 10_000; // every cooldown has ended but the late one's
    await settle(manager);
    assert.deepEqual(attachedDevices(cloud), [0, 1, 2], 'device 1 holds a pod, device 2 a cooling address');
    assert.ok(cloud.attached()[2]?.secondaryIps.includes(late), 'the cooling address stayed on the node');
    assert.equal(cloud.calls.filter((c) => c.startsWith('detachEni')).length, 0);

    clock.t += 20_000;
    await settle(manager);
    assert.deepEqual(attachedDevices(cloud), [0, 1], 'device 2 goes once its cooldown ended');
    assert.ok(cloud.attached()[1]?.secondaryIps.includes(keep), 'the held address is still there');
    assert.equal(pool.state(keep)?.kind, 'assigned');
  });

  test('a failing detach puts the ENI and its addresses back with its link configured again, and the loop retries with backoff', async () => {
    virtualTime.enable();
    const { cloud, pool, manager, clock, logs, attachedHook, detachingHook } = await setup({
      targets: { warmIpTarget: 1 },
    });
    const ips = await burst(manager, 4);
    assert.deepEqual(attachedDevices(cloud), [0, 1]);
    for (const ip of ips) manager.release(ip);
    clock.t += MIN_ENI_LIFETIME_MS; // cooldowns ended, and the ENIs are past their first minute
    const eni1 = cloud.attached()[1];
    assert.ok(eni1);

    cloud.failNext('detachEni');
    await assert.rejects(
      manager.runPass(),
      /^Error: cannot detach ENI eni-0001 \(attachment attach-eni-0001\): RequestLimitExceeded/,
    );
    assert.deepEqual(
      [...pool.addresses('eni-0001').keys()].sort(),
      [...eni1.secondaryIps].sort(),
      'pool and cloud agree again: no address lost',
    );
    assert.ok([...pool.addresses('eni-0001').values()].every((st) => st.kind === 'free'));
    assert.equal(manager.enis()[1]?.state, 'ready');
    assert.equal(detachingHook.length, 1);
    assert.deepEqual(
      attachedHook.map((e) => e.eniId),
      ['eni-0001', 'eni-0001'],
      'the torn-down link is configured again before its addresses return',
    );

    cloud.failNext('detachEni', undefined, 2);
    manager.start();
    const took = await virtualTime.until('ENI freed', () => attachedDevices(cloud).join() === '0');
    assert.equal(took, 5 + 10, 'two failed passes back off 5, then 10 virtual ms');
    assert.equal(cloud.enis.has('eni-0001'), false);
    assert.equal(logs.filter((l) => l.startsWith('error address pool pass failed')).length, 2);
    assert.match(logs.find((l) => l.startsWith('info detached ENI')) ?? '', /eni-0001/);
  });

  test('a failing link teardown keeps the ENI attached and in the pool until a later pass', async () => {
    let teardownFails = true;
    const { cloud, pool, manager, clock } = await setup({
      targets: { warmIpTarget: 1 },
      deps: {
        onEniDetaching: async () => {
          if (teardownFails) throw new Error('RTNETLINK answers: Operation not permitted');
        },
      },
    });
    for (const ip of await burst(manager, 4)) manager.release(ip);
    clock.t += MIN_ENI_LIFETIME_MS; // cooldowns ended, and the ENIs are past their first minute
    await assert.rejects(
      settle(manager),
      /cannot free ENI eni-0001: its link teardown failed: RTNETLINK answers: Operation not permitted/,
    );
    assert.equal(cloud.calls.filter((c) => c.startsWith('detachEni')).length, 0);
    assert.deepEqual(
      [...pool.addresses('eni-0001').keys()].sort(),
      [...(cloud.attached()[1]?.secondaryIps ?? [])].sort(),
    );
    teardownFails = false;
    await settle(manager);
    assert.deepEqual(attachedDevices(cloud), [0]);
  });

  test('an ENI whose link cannot be set up again after a failed detach stays configuring and out of the pool until it can', async () => {
    let setupFails = false;
    const { cloud, pool, manager, clock } = await setup({
      targets: { warmIpTarget: 1 },
      deps: {
        onEniAttached: async () => {
          if (setupFails) throw new Error('link vanished');
        },
      },
    });
    for (const ip of await burst(manager, 4)) manager.release(ip);
    clock.t += MIN_ENI_LIFETIME_MS; // cooldowns ended, and the ENIs are past their first minute
    setupFails = true;
    cloud.failNext('detachEni');
    await assert.rejects(manager.runPass(), /cannot detach ENI eni-0001/);
    assert.equal(manager.enis()[1]?.state, 'configuring');
    assert.equal(pool.eni('eni-0001'), undefined, 'its addresses are not lent meanwhile');
    assert.ok(
      manager.protectedAddresses().has(cloud.attached()[1]?.primaryIp ?? ''),
      'its rule stays protected',
    );
    setupFails = false;
    await settle(manager);
    assert.deepEqual(attachedDevices(cloud), [0], 'configured again, then freed');
  });

  test('a detached ENI whose delete fails is deleted by a later pass', async () => {
    const { cloud, manager, clock, logs } = await setup({ targets: { warmIpTarget: 1 } });
    for (const ip of await burst(manager, 4)) manager.release(ip);
    clock.t += MIN_ENI_LIFETIME_MS; // cooldowns ended, and the ENIs are past their first minute
    cloud.failNext(
      'deleteEni',
      new CloudError(
        'Network interface eni-0001 is currently in use',
        'InvalidNetworkInterface.InUse',
        false,
      ),
    );
    assert.deepEqual(await manager.runPass(), { kind: 'freeEni', eniId: 'eni-0001' });
    assert.deepEqual(attachedDevices(cloud), [0]);
    assert.equal(cloud.enis.has('eni-0001'), true);
    assert.deepEqual(manager.pendingEniDeletes(), ['eni-0001']);
    assert.equal(manager.attachedEniCount(), 1, 'a detached ENI holds no device slot');
    assert.match(logs.find((l) => l.startsWith('warn cannot delete detached ENI')) ?? '', /InUse/);
    await manager.runPass();
    assert.equal(cloud.enis.has('eni-0001'), false);
    assert.deepEqual(manager.pendingEniDeletes(), []);
  });

  test('an idle ENI vpcnet did not create is left alone; one it created before a restart is freed (by tag or by description)', async () => {
    const { cloud, manager, clock } = await setup({
      primarySecondaryIps: 3,
      targets: { warmIpTarget: 1 },
      prepare: (cloud) => {
        cloud.attachForeignEni({ deviceIndex: 1, description: 'made by someone else', secondaryIps: 2 });
        cloud.attachForeignEni({
          deviceIndex: 2,
          description: `vpcnet: node ${cloud.meta.instanceId}`,
          secondaryIps: 2,
        });
        cloud.attachForeignEni({
          deviceIndex: 3,
          tags: { 'vpcnet.io/created-by': 'vpcnet' },
          secondaryIps: 2,
        });
      },
      limits: { maxEnis: 4, ipsPerEni: 4 },
    });
    await settle(manager);
    assert.deepEqual(attachedDevices(cloud), [0, 1, 2, 3], 'ENIs found at start get their first minute too');
    clock.t += MIN_ENI_LIFETIME_MS;
    await settle(manager);
    assert.deepEqual(attachedDevices(cloud), [0, 1]);
    assert.deepEqual(
      cloud.calls.filter((c) => c.startsWith('detachEni')),
      ['detachEni attach-eni-0003', 'detachEni attach-eni-0002'],
    );
    assert.equal(cloud.attached()[1]?.description, 'made by someone else');
  });
});
