import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { CloudError, type EniInfo, type InstanceTypeLimits } from '../cloud/cloud.ts';
import { Ledger } from '../ledger/ledger.ts';
import { MemoryLedgerStore } from '../ledger/store.ts';
import type { Attachment } from '../plan/attachment.ts';
import { FakeCloud } from './fake-cloud.ts';
import { AddressPool } from './pool.ts';
import { PoolManager, type PoolManagerDeps } from './pool-manager.ts';
import type { WarmPoolTargets } from './targets.ts';

interface Setup {
  readonly cloud: FakeCloud;
  readonly pool: AddressPool;
  readonly manager: PoolManager;
  readonly clock: { t: number; now(): number };
  readonly logs: string[];
  readonly attachedHook: EniInfo[];
  /** Each onEniDetaching call: the ENI, and whether the pool still knew it or its addresses then. */
  readonly detachingHook: { eni: EniInfo; inPool: boolean }[];
}

const running: PoolManager[] = [];
afterEach(async () => {
  for (const m of running.splice(0)) await m.stop();
});

async function setup(
  opts: {
    targets?: Partial<WarmPoolTargets>;
    limits?: InstanceTypeLimits;
    primarySecondaryIps?: number;
    deps?: Partial<PoolManagerDeps>;
    prepare?: (cloud: FakeCloud) => Promise<void>;
  } = {},
): Promise<Setup> {
  const cloud = new FakeCloud({
    limits: opts.limits ?? { maxEnis: 3, ipsPerEni: 4 },
    primarySecondaryIps: opts.primarySecondaryIps ?? 0,
  });
  await opts.prepare?.(cloud);
  const targets: WarmPoolTargets = { warmEniTarget: 1, cooldownSeconds: 30, ...opts.targets };
  const clock = {
    t: 1_000_000,
    now() {
      return this.t;
    },
  };
  const pool = new AddressPool({ cooldownMs: targets.cooldownSeconds * 1000 });
  const logs: string[] = [];
  const attachedHook: EniInfo[] = [];
  const detachingHook: { eni: EniInfo; inPool: boolean }[] = [];
  const record = (level: string) => (msg: string, fields?: Record<string, unknown>) =>
    logs.push(`${level} ${msg} ${JSON.stringify(fields ?? {})}`);
  const manager = new PoolManager({
    cloud,
    pool,
    clock,
    log: { info: record('info'), warn: record('warn'), error: record('error') },
    metadata: cloud.meta,
    limits: cloud.limits,
    targets,
    onEniAttached: async (eni) => {
      attachedHook.push(eni);
    },
    onEniDetaching: async (eni) => {
      const inPool = pool.eni(eni.eniId) !== undefined || eni.secondaryIps.some((ip) => pool.state(ip));
      detachingHook.push({ eni, inPool });
    },
    intervalMs: 10,
    retryBaseMs: 5,
    maxBackoffMs: 20,
    ...opts.deps,
  });
  running.push(manager);
  await manager.init();
  return { cloud, pool, manager, clock, logs, attachedHook, detachingHook };
}

/** Pods arrive one by one, the manager settling in between, until `pods` hold addresses. */
async function burst(manager: PoolManager, pods: number): Promise<string[]> {
  const ips: string[] = [];
  for (let i = 0; i < pods; i++) {
    await settle(manager);
    const got = manager.allocate(`vpcnet/p${i}/eth0`);
    assert.ok(got, `pod ${i} got no address`);
    ips.push(got.ip);
  }
  await settle(manager);
  return ips;
}

function attachedDevices(cloud: FakeCloud): number[] {
  return cloud.attached().map((e) => e.attachment?.deviceIndex ?? -1);
}

/** Applies decisions until there is nothing left to do; returns what was done. */
async function settle(manager: PoolManager): Promise<string[]> {
  const done: string[] = [];
  for (let i = 0; i < 20; i++) {
    const d = await manager.reconcileOnce();
    if (d.kind === 'none') return done;
    done.push('count' in d ? `${d.kind} ${d.count}` : d.kind);
  }
  throw new Error(`pool did not settle: ${done.join(', ')}`);
}

async function eventually(what: string, cond: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

function secondaryCounts(cloud: FakeCloud): number[] {
  return cloud.attached().map((e) => e.secondaryIps.length);
}

describe('PoolManager', () => {
  test('init rebuilds the pool from the instance ENIs and skips unmanaged ones', async () => {
    const { pool, manager } = await setup({
      primarySecondaryIps: 2,
      prepare: async (cloud) => {
        for (const device of [1, 2]) {
          const eni = await cloud.createEni('subnet-1', ['sg-1'], 'pre-existing');
          await cloud.attachEni(eni.eniId, cloud.meta.instanceId, device);
          await cloud.assignPrivateIps(eni.eniId, device);
        }
      },
      deps: { isUnmanaged: (eni) => eni.deviceNumber === 2 },
    });
    assert.deepEqual(
      pool.enis().map((e) => [e.deviceNumber, e.routeTable, pool.addresses(e.eniId).size]),
      [
        [0, 254, 2],
        [1, 2, 1],
      ],
    );
    assert.equal(manager.attachedEniCount(), 3, 'the unmanaged ENI still occupies a device slot');
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
    assert.equal(created.description, `vpcnet: node ${cloud.meta.instanceId}`);
    assert.equal(created.attachment?.deviceIndex, 1);
    assert.equal(created.attachment?.deleteOnTermination, true);
    assert.deepEqual(
      attachedHook.map((e) => [e.eniId, e.deviceNumber]),
      [[created.eniId, 1]],
    );
    assert.deepEqual(pool.stats(clock0()), { total: 6, assigned: 1, cooling: 0, available: 5, enis: 2 });
  });

  test('WARM_IP_TARGET=2 MINIMUM_IP_TARGET=5 grows to exactly five addresses over two ENIs', async () => {
    const { cloud, manager } = await setup({ targets: { warmIpTarget: 2, minimumIpTarget: 5 } });
    assert.deepEqual(await settle(manager), ['assign 3', 'attachEni', 'assign 2']);
    assert.deepEqual(secondaryCounts(cloud), [3, 2]);
  });

  test('a new ENI takes the lowest device index no ENI uses', async () => {
    const { cloud, manager } = await setup({
      prepare: async (cloud) => {
        const eni = await cloud.createEni('subnet-1', ['sg-1'], 'trunk');
        await cloud.attachEni(eni.eniId, cloud.meta.instanceId, 1);
      },
      deps: { isUnmanaged: (eni) => eni.deviceNumber === 1 },
      limits: { maxEnis: 4, ipsPerEni: 2 },
    });
    await settle(manager);
    manager.allocate('vpcnet/c1/eth0');
    await settle(manager);
    assert.deepEqual(
      cloud.attached().map((e) => e.attachment?.deviceIndex),
      [0, 1, 2],
    );
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
      manager.reconcileOnce(),
      /^Error: cannot attach ENI eni-0001 at device index 1: AttachmentLimitExceeded: Interface count exceeds the limit$/,
    );
    assert.ok(cloud.calls.includes('deleteEni eni-0001'));
    assert.equal(cloud.enis.has('eni-0001'), false, 'nothing leaks');
    assert.deepEqual(await settle(manager), ['attachEni', 'assign 3'], 'the next pass tries again');
  });

  test('the background loop retries a throttled call with backoff and reaches the target', async () => {
    const { cloud, pool, manager, logs } = await setup();
    cloud.failNext('assignPrivateIps', undefined, 3);
    manager.start();
    await eventually('pool filled', () => pool.stats(0).total === 3);
    assert.equal(logs.filter((l) => l.startsWith('error address pool pass failed')).length, 3);
    assert.match(logs.find((l) => l.startsWith('error')) ?? '', /RequestLimitExceeded/);
    assert.equal(cloud.calls.filter((c) => c.startsWith('assignPrivateIps')).length, 4);
  });

  test('a failed release puts the addresses back in the pool', async () => {
    const { cloud, pool, manager } = await setup({ primarySecondaryIps: 3, targets: { warmIpTarget: 1 } });
    cloud.failNext('unassignPrivateIps');
    await assert.rejects(
      manager.reconcileOnce(),
      /cannot release 2 addresses of ENI eni-primary: RequestLimitExceeded/,
    );
    assert.equal(pool.stats(0).available, 3);
    assert.deepEqual(await settle(manager), ['release 2']);
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
      manager.reconcileOnce(),
      /attached at device 1 but its link is not configured: link not found/,
    );
    assert.equal(pool.enis().length, 1);
    assert.equal(manager.attachedEniCount(), 2);
    await assert.rejects(manager.reconcileOnce(), /link not found/);
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
  });

  test('concurrent passes do not attach two ENIs for one need', async () => {
    const { cloud, manager } = await setup({ primarySecondaryIps: 3 });
    manager.allocate('vpcnet/c1/eth0');
    const results = await Promise.all([manager.reconcileOnce(), manager.reconcileOnce()]);
    assert.deepEqual(
      results.map((r) => r.kind),
      ['attachEni', 'assign'],
    );
    assert.equal(cloud.attached().length, 2);
  });

  test('an allocation that drops below the target nudges the loop without waiting for the interval', async () => {
    const { cloud, manager } = await setup({ primarySecondaryIps: 3, deps: { intervalMs: 60_000 } });
    manager.start();
    await new Promise((r) => setTimeout(r, 20));
    manager.allocate('vpcnet/c1/eth0');
    await eventually('second ENI filled', () => secondaryCounts(cloud).join() === '3,3');
  });

  test('waitForAddress resolves once the pool has grown', async () => {
    const { manager } = await setup({ primarySecondaryIps: 3, targets: { warmEniTarget: 0 } });
    for (let i = 0; i < 3; i++) assert.ok(manager.allocate(`vpcnet/c${i}/eth0`));
    assert.equal(manager.allocate('vpcnet/c3/eth0'), undefined);
    manager.start();
    await manager.waitForAddress(2000);
    assert.equal(manager.allocate('vpcnet/c3/eth0')?.eni.deviceNumber, 1);
  });

  test('waitForAddress resolves when a cooldown ends', async () => {
    const { manager, clock } = await setup({ primarySecondaryIps: 1, limits: { maxEnis: 1, ipsPerEni: 2 } });
    const got = manager.allocate('vpcnet/a/eth0');
    assert.ok(got);
    manager.release(got.ip);
    manager.start();
    const waiting = manager.waitForAddress(2000);
    clock.t += 30_000;
    await waiting;
    assert.equal(manager.allocate('vpcnet/b/eth0')?.ip, got.ip);
  });

  test('waitForAddress rejects at the limits with an error naming them', async () => {
    const { manager } = await setup({ primarySecondaryIps: 3, limits: { maxEnis: 1, ipsPerEni: 4 } });
    for (let i = 0; i < 3; i++) manager.allocate(`vpcnet/c${i}/eth0`);
    manager.release(manager.allocate('vpcnet/c0/eth0')?.ip ?? '');
    manager.start();
    await assert.rejects(
      manager.waitForAddress(50),
      /^Error: no free address after 50 ms: 1\/1 ENIs × 3 secondary IPs, 2 in use, 1 cooling; the pool is at its limits$/,
    );
  });

  test('waitForAddress names the last cloud error when growth keeps failing', async () => {
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
    await assert.rejects(
      manager.waitForAddress(60),
      /last pool error: cannot create an ENI in subnet-1: InsufficientFreeAddressesInSubnet/,
    );
  });
});

describe('PoolManager with a ledger', () => {
  test('init restores assignments and cooldowns; ended cooldowns leave the ledger', async () => {
    const store = new MemoryLedgerStore();
    const ledger = await Ledger.open(store, { now: () => 0 });
    const { pool, manager, clock } = await setup({
      primarySecondaryIps: 3,
      targets: { warmEniTarget: 0 },
      deps: { ledger },
      prepare: async (cloud) => {
        const ips = cloud.enis.get('eni-primary')?.secondaryIps ?? [];
        ledger.put(attachmentFor('a', ips[0] ?? ''));
        ledger.addCooling(ips[1] ?? '', 'eni-primary', 1_000_000 - 10_000);
        ledger.addCooling(ips[2] ?? '', 'eni-primary', 1_000_000 - 29_000);
        ledger.addCooling('10.9.9.9', 'eni-gone', 1_000_000);
      },
    });
    const [held, cooling1, cooling2] = pool.enis().flatMap((e) => [...pool.addresses(e.eniId).keys()]);
    assert.deepEqual(pool.state(held ?? ''), { kind: 'assigned', owner: 'vpcnet/a/eth0' });
    assert.equal(
      manager.allocate('vpcnet/b/eth0'),
      undefined,
      'both cooling: convergence: cooldown survives restarts',
    );

    assert.deepEqual(
      ledger.coolingAddresses().map((c) => c.ip),
      [cooling1, cooling2],
      'a cooling record for an address this node no longer has is dropped',
    );

    clock.t += 1_000;
    await manager.reconcileOnce();
    assert.deepEqual(
      ledger.coolingAddresses().map((c) => c.ip),
      [cooling1],
      'the ended cooldown is dropped',
    );
    await ledger.commit();
    assert.deepEqual(
      (await store.load())?.cooling.map((c) => c.ip),
      [cooling1],
    );
    assert.equal(manager.allocate('vpcnet/b/eth0')?.ip, cooling2);

    clock.t += 20_000;
    assert.equal(manager.allocate('vpcnet/c/eth0')?.ip, cooling1);
    assert.deepEqual(ledger.coolingAddresses(), [], 'handing out a cooled address drops its record');
  });
});

function attachmentFor(id: string, ip: string, eniId = 'eni-primary'): Attachment {
  return {
    key: { network: 'vpcnet', containerId: id, ifName: 'eth0' },
    pod: {},
    netns: `/var/run/netns/${id}`,
    createdAt: 0,
    resources: [{ kind: 'vpcAddress', ip, eniId }],
  };
}

function clock0(): number {
  return 1_000_000;
}

describe('PoolManager frees idle ENIs', () => {
  test('after a burst to 3 ENIs and every pod gone, idle ENIs are detached and deleted down to the target once cooldowns end, never the primary', async () => {
    const { cloud, pool, manager, clock, detachingHook } = await setup({ targets: { warmIpTarget: 1 } });
    const ips = await burst(manager, 7);
    assert.deepEqual(attachedDevices(cloud), [0, 1, 2]);
    for (const ip of ips) manager.release(ip);

    assert.deepEqual(await settle(manager), [], 'cooling addresses keep every ENI');
    assert.deepEqual(attachedDevices(cloud), [0, 1, 2]);

    clock.t += 30_000;
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
      pool.enis().map((e) => e.eniId),
      ['eni-primary'],
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
    clock.t += 30_000;
    await settle(manager);
    assert.ok(attachedDevices(cloud).includes(2), 'the ENI a live attachment uses was detached');
  });

  test('WARM_ENI_TARGET=1 keeps one ENI’s worth of addresses and frees the rest', async () => {
    const { cloud, manager, clock } = await setup();
    const ips = await burst(manager, 7);
    assert.deepEqual(attachedDevices(cloud), [0, 1, 2]);
    for (const ip of ips) manager.release(ip);
    clock.t += 30_000;
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
    const { cloud, pool, manager, clock, logs, attachedHook, detachingHook } = await setup({
      targets: { warmIpTarget: 1 },
    });
    const ips = await burst(manager, 4);
    assert.deepEqual(attachedDevices(cloud), [0, 1]);
    for (const ip of ips) manager.release(ip);
    clock.t += 30_000;
    const eni1 = cloud.attached()[1];
    assert.ok(eni1);

    cloud.failNext('detachEni');
    await assert.rejects(
      manager.reconcileOnce(),
      /^Error: cannot detach ENI eni-0001 \(attachment attach-eni-0001\): RequestLimitExceeded/,
    );
    assert.deepEqual(
      [...pool.addresses('eni-0001').keys()].sort(),
      [...eni1.secondaryIps].sort(),
      'pool and cloud agree again: no address lost',
    );
    assert.ok([...pool.addresses('eni-0001').values()].every((st) => st.kind === 'free'));
    assert.equal(detachingHook.length, 1);
    assert.deepEqual(
      attachedHook.map((e) => e.eniId),
      ['eni-0001', 'eni-0001'],
      'the torn-down link is configured again before its addresses return',
    );

    cloud.failNext('detachEni', undefined, 2);
    manager.start();
    await eventually('ENI freed', () => attachedDevices(cloud).join() === '0');
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
    clock.t += 30_000;
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

  test('a detached ENI whose delete fails is deleted by a later pass', async () => {
    const { cloud, manager, clock, logs } = await setup({ targets: { warmIpTarget: 1 } });
    for (const ip of await burst(manager, 4)) manager.release(ip);
    clock.t += 30_000;
    cloud.failNext(
      'deleteEni',
      new CloudError(
        'Network interface eni-0001 is currently in use',
        'InvalidNetworkInterface.InUse',
        false,
      ),
    );
    assert.deepEqual(await manager.reconcileOnce(), { kind: 'freeEni', eniId: 'eni-0001' });
    assert.deepEqual(attachedDevices(cloud), [0]);
    assert.equal(cloud.enis.has('eni-0001'), true);
    assert.deepEqual(manager.pendingEniDeletes(), ['eni-0001']);
    assert.match(logs.find((l) => l.startsWith('warn cannot delete detached ENI')) ?? '', /InUse/);
    await manager.reconcileOnce();
    assert.equal(cloud.enis.has('eni-0001'), false);
    assert.deepEqual(manager.pendingEniDeletes(), []);
  });

  test('an idle ENI vpcnet did not create is left alone; one it created before a restart is freed', async () => {
    const { cloud, manager } = await setup({
      primarySecondaryIps: 3,
      targets: { warmIpTarget: 1 },
      prepare: async (cloud) => {
        for (const [device, description] of [
          [1, 'made by someone else'],
          [2, `vpcnet: node ${cloud.meta.instanceId}`],
        ] as const) {
          const eni = await cloud.createEni('subnet-1', ['sg-1'], description);
          await cloud.attachEni(eni.eniId, cloud.meta.instanceId, device);
          await cloud.assignPrivateIps(eni.eniId, 2);
        }
      },
    });
    await settle(manager);
    assert.deepEqual(attachedDevices(cloud), [0, 1]);
    assert.deepEqual(
      cloud.calls.filter((c) => c.startsWith('detachEni')),
      ['detachEni attach-eni-0002'],
    );
    assert.equal(cloud.attached()[1]?.description, 'made by someone else');
  });
});
