// The cloud sync with the real AWS driver against the in-process emulator. Under throttling,
// internal errors and describes up to the stale window old, through many sync passes while pods
// come and go, the pool shrinks and grows and addresses are assigned outside vpcnet: no held
// address ever leaves the pool, and no address EC2 does not list is ever lent. And an address only
// IMDS still shows never enters the pool.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { ImdsClient } from '../../cloud/imds.ts';
import { Ledger } from '../../ledger/ledger.ts';
import { MemoryLedgerStore } from '../../ledger/testing/memory-store.ts';
import { AddressPool } from '../pool/pool.ts';
import { PoolManager } from '../pool/pool-manager.ts';
import type { WarmPoolTargets } from '../pool/targets.ts';
import { type EmulatedNode, startEmulatedNode } from '../testing/emulated-node.ts';

const STALE_MS = 5_000;
const TARGETS: WarmPoolTargets = {
  warmEniTarget: 1,
  warmIpTarget: 2,
  minimumIpTarget: 3,
  cooldownSeconds: 10,
};
/**
 * What a call may fail with: the injected faults, and the ENI's address limit (addresses assigned
 * outside vpcnet fill an ENI before the sync has confirmed them).
 */
const EXPECTED = /RequestLimitExceeded|InternalError|PrivateIpAddressLimitExceeded/;
const quiet = { info() {}, warn() {}, error() {} };

type Op =
  | { readonly op: 'allocate' | 'release'; readonly pod: number }
  | { readonly op: 'advance'; readonly ms: number }
  | { readonly op: 'pass' | 'sync' | 'outsideAssign' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant('allocate' as const), pod: fc.nat(9) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('release' as const), pod: fc.nat(9) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.nat(2 * STALE_MS) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('pass' as const) }) },
  { weight: 5, arbitrary: fc.record({ op: fc.constant('sync' as const) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('outsideAssign' as const) }) },
);

async function managerOn(node: EmulatedNode, clock: { now(): number }) {
  const pool = new AddressPool({ cooldownMs: TARGETS.cooldownSeconds * 1000 });
  const metadata = await node.cloud.metadata();
  const manager = new PoolManager({
    cloud: node.cloud,
    pool,
    clock,
    log: quiet,
    metadata,
    limits: await node.cloud.instanceTypeLimits(metadata.instanceType),
    targets: TARGETS,
    ledger: await Ledger.open(new MemoryLedgerStore(), clock),
    staleWindowMs: STALE_MS,
  });
  await manager.init({ configureLinks: true });
  return { pool, manager, metadata };
}

/** The instance's addresses as EC2 holds them now: address → ENI. */
async function truthOf(node: EmulatedNode): Promise<Map<string, string>> {
  const attached = (await node.truth()).filter((e) => e.attachment?.instanceId === node.instance.instanceId);
  return new Map(attached.flatMap((e) => e.secondaryIps.map((ip) => [ip, e.eniId] as const)));
}

test('under throttling, errors and stale describes, many sync passes never drop a held address nor lend one EC2 does not list', async () => {
  let adopted = 0;
  let failures = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(opArb, { minLength: 60, maxLength: 120 }), fc.nat(1000), async (ops, seed) => {
      const clock = { t: 1_000_000, now: () => clock.t };
      const node = await startEmulatedNode({ instanceType: 't3.medium', seed, nowMs: clock.now });
      try {
        const { pool, manager } = await managerOn(node, clock);
        const held = new Map<number, string>();
        const tolerate = (err: unknown) => {
          if (!EXPECTED.test(String(err))) throw err;
          failures++;
        };
        node.setFaults({ throttleRate: 0.2, errorRate: 0.1, staleReadMs: STALE_MS });
        for (const o of ops) {
          const when = `after ${JSON.stringify(o)}`;
          switch (o.op) {
            case 'allocate': {
              if (held.has(o.pod)) break;
              const got = manager.allocate(`vpcnet/pod${o.pod}/eth0`);
              if (!got) break;
              assert.equal(
                (await truthOf(node)).get(got.ip),
                got.eniId,
                `${when}: lent ${got.ip}, not in EC2`,
              );
              held.set(o.pod, got.ip);
              break;
            }
            case 'release': {
              const ip = held.get(o.pod);
              if (ip !== undefined) manager.release(ip);
              held.delete(o.pod);
              break;
            }
            case 'advance':
              clock.t += o.ms;
              break;
            case 'pass':
              await manager.runPass().catch(tolerate);
              break;
            case 'sync':
              await manager.syncWithCloud().catch(tolerate);
              break;
            case 'outsideAssign': {
              const eni = pool.enis()[0];
              if (eni) await node.cloud.assignPrivateIps(eni.eniId, 1).catch(tolerate);
              break;
            }
          }
          for (const [pod, ip] of held)
            assert.deepEqual(
              pool.state(ip),
              { kind: 'assigned', owner: `vpcnet/pod${pod}/eth0` },
              `${when}: ${ip}`,
            );
          const truth = await truthOf(node);
          for (const eni of pool.enis())
            for (const ip of pool.addresses(eni.eniId).keys())
              assert.equal(truth.get(ip), eni.eniId, `${when}: pooled ${ip} is not on ${eni.eniId} in EC2`);
        }
        adopted += manager.health().sync.differences.addressAdded;
        await manager.stop();
      } finally {
        await node.close();
      }
    }),
    { numRuns: 4, seed: 3019, endOnFailure: true },
  );
  assert.ok(failures > 0, 'the faults made some calls fail');
  assert.ok(adopted > 0, 'addresses assigned outside vpcnet joined the pool');
});

test('an address IMDS still shows but EC2 no longer lists is never handed out', async () => {
  const clock = { t: 1_000_000, now: () => clock.t };
  const node = await startEmulatedNode({ instanceType: 't3.medium', seed: 7, nowMs: clock.now });
  try {
    const { pool, manager, metadata } = await managerOn(node, clock);
    while ((await manager.runPass()).kind !== 'none') {}
    // IMDS lags a minute behind EC2 (EC2 itself answers fresh: the fault names no EC2 action).
    node.setFaults({ staleReadMs: 60_000, imds: true, actions: ['NoEc2Action'] });
    // Pods take every address, the pool grows; they leave, and once cooled the excess goes back.
    const taken = Array.from({ length: pool.stats(clock.t).total }, (_, i) =>
      manager.allocate(`vpcnet/p${i}/eth0`),
    );
    while ((await manager.runPass()).kind !== 'none') {}
    for (const got of taken) if (got) manager.release(got.ip);
    clock.t += TARGETS.cooldownSeconds * 1000;
    while ((await manager.runPass()).kind !== 'none') {}
    const truth = await truthOf(node);
    const imds = new ImdsClient({ endpoint: node.url });
    const imdsIps = (await imds.getLines(`network/interfaces/macs/${metadata.primaryMac}/local-ipv4s`)).slice(
      1,
    );
    const onlyImds = imdsIps.filter((ip) => ip !== metadata.primaryIp && !truth.has(ip));
    assert.ok(onlyImds.length > 0, 'IMDS shows addresses EC2 no longer lists');
    for (let i = 0; i < 4; i++) {
      clock.t += STALE_MS;
      await manager.syncWithCloud();
      for (const ip of onlyImds) assert.equal(pool.state(ip), undefined, `${ip} entered the pool`);
    }
    const lent = Array.from({ length: 12 }, (_, i) => manager.allocate(`vpcnet/q${i}/eth0`)?.ip);
    for (const ip of onlyImds) assert.ok(!lent.includes(ip), `${ip} was handed out`);
    await manager.stop();
  } finally {
    await node.close();
  }
});
