// The real PoolManager with the real AWS driver against the in-process emulator, under throttling,
// internal errors and stale reads: through random allocations, releases, passes and re-describes,
// no address is handed out twice, every pooled address is the instance's in EC2, the ENI limit
// holds, no ENI vpcnet created leaks, and once the faults stop the pool settles at its targets.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { Ledger } from '../../ledger/ledger.ts';
import { MemoryLedgerStore } from '../../ledger/testing/memory-store.ts';
import { CREATED_BY_TAG, INSTANCE_ID_TAG } from '../enis/eni-ownership.ts';
import { type EmulatedNode, startEmulatedNode, type TrueEni } from '../testing/emulated-node.ts';
import { AddressPool } from './pool.ts';
import { PoolManager } from './pool-manager.ts';
import type { WarmPoolTargets } from './targets.ts';

const COOLDOWN_MS = 30_000;
const TARGETS: WarmPoolTargets = {
  warmEniTarget: 1,
  warmIpTarget: 2,
  minimumIpTarget: 4,
  cooldownSeconds: 30,
};
/** What a failed call may say under the injected faults; any other failure is a bug. */
const INJECTED = /RequestLimitExceeded|InternalError/;

type Op =
  | { readonly op: 'allocate'; readonly pod: number }
  | { readonly op: 'release'; readonly pod: number }
  | { readonly op: 'advance'; readonly ms: number }
  | { readonly op: 'pass' }
  | { readonly op: 'refresh' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant('allocate' as const), pod: fc.nat(11) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('release' as const), pod: fc.nat(11) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.nat(40_000) }) },
  { weight: 5, arbitrary: fc.record({ op: fc.constant('pass' as const) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('refresh' as const) }) },
);

test('under throttling, errors and stale reads the pool never double-allocates, stays in EC2, within limits and leak-free, and settles at its targets', async () => {
  let injectedFailures = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(opArb, { minLength: 40, maxLength: 90 }), fc.nat(1000), async (ops, seed) => {
      const node = await startEmulatedNode({ instanceType: 't3.medium', seed });
      try {
        injectedFailures += await run(node, ops);
      } finally {
        await node.close();
      }
    }),
    { numRuns: 4, seed: 1644, endOnFailure: true },
  );
  assert.ok(injectedFailures > 0, 'the faults made some calls fail');
});

/** Runs the ops under faults, checking after each; then without faults to a fixed point. Returns the injected failures seen. */
async function run(node: EmulatedNode, ops: readonly Op[]): Promise<number> {
  const clock = { t: 0, now: () => clock.t };
  const pool = new AddressPool({ cooldownMs: COOLDOWN_MS });
  const ledger = await Ledger.open(new MemoryLedgerStore(), clock);
  const metadata = await node.cloud.metadata();
  const limits = await node.cloud.instanceTypeLimits(metadata.instanceType);
  const quiet = { info() {}, warn() {}, error() {} };
  const manager = new PoolManager({
    cloud: node.cloud,
    pool,
    clock,
    log: quiet,
    metadata,
    limits,
    targets: TARGETS,
    ledger,
  });
  await manager.init({ configureLinks: true });
  const held = new Map<number, string>(); // pod → ip
  const freedAt = new Map<string, number>();
  let failures = 0;
  const tolerate = (err: unknown) => {
    if (!INJECTED.test(String(err))) throw err;
    failures++;
  };

  node.setFaults({ throttleRate: 0.2, errorRate: 0.1, staleReadMs: 500 });
  for (const o of ops) {
    switch (o.op) {
      case 'allocate': {
        const got = held.has(o.pod) ? undefined : manager.allocate(`vpcnet/pod${o.pod}/eth0`);
        if (got) held.set(o.pod, got.ip);
        break;
      }
      case 'release': {
        const ip = held.get(o.pod);
        if (ip === undefined) break;
        manager.release(ip);
        held.delete(o.pod);
        freedAt.set(ip, clock.t);
        break;
      }
      case 'advance':
        clock.t += o.ms;
        break;
      case 'pass':
        await manager.runPass().catch(tolerate);
        break;
      case 'refresh':
        await manager.refreshEnis().catch(tolerate);
        break;
    }
    await checkInvariants(node, manager, pool, held, freedAt, clock.t, `after ${JSON.stringify(o)}`);
  }

  // The faults stop; every pod leaves; once their cooldowns end, the pool settles at its targets.
  node.setFaults({});
  for (const ip of held.values()) manager.release(ip);
  held.clear();
  clock.t += COOLDOWN_MS;
  for (let i = 0; (await manager.runPass()).kind !== 'none'; i++)
    assert.ok(i < 40, 'the pool settles once faults stop');
  await checkInvariants(node, manager, pool, held, freedAt, clock.t, 'after settling');
  const stats = pool.stats(clock.t);
  assert.deepEqual(
    [stats.total, stats.available, stats.assigned],
    [TARGETS.minimumIpTarget, TARGETS.minimumIpTarget, 0],
    'idle, the pool holds exactly MINIMUM_IP_TARGET addresses (WARM_IP_TARGET met)',
  );
  assert.deepEqual(manager.pendingEniDeletes(), [], 'every ENI vpcnet detached is deleted');
  assert.ok(
    manager.attachedEniCount() <= 1 + Math.ceil(TARGETS.minimumIpTarget! / 5),
    'idle ENIs were freed',
  );
  await manager.stop();
  return failures;
}

async function checkInvariants(
  node: EmulatedNode,
  manager: PoolManager,
  pool: AddressPool,
  held: ReadonlyMap<number, string>,
  freedAt: ReadonlyMap<string, number>,
  now: number,
  when: string,
): Promise<void> {
  const truth = await node.truth();
  const instanceId = node.instance.instanceId;
  const attached = truth.filter((e) => e.attachment?.instanceId === instanceId);
  const onInstance = new Map(attached.flatMap((e) => e.secondaryIps.map((ip) => [ip, e.eniId] as const)));

  const heldIps = [...held.values()];
  assert.equal(new Set(heldIps).size, heldIps.length, `${when}: an address was handed out twice`);
  for (const [pod, ip] of held)
    assert.deepEqual(pool.state(ip), { kind: 'assigned', owner: `vpcnet/pod${pod}/eth0` }, `${when}: ${ip}`);

  for (const eni of pool.enis()) {
    for (const ip of pool.addresses(eni.eniId).keys())
      assert.equal(
        onInstance.get(ip),
        eni.eniId,
        `${when}: pooled ${ip} is not assigned to ${eni.eniId} in EC2`,
      );
  }
  for (const [ip, at] of freedAt) {
    if (now - at < COOLDOWN_MS) assert.ok(onInstance.has(ip), `${when}: ${ip} given back while cooling`);
  }

  assert.ok(attached.length <= 3, `${when}: ${attached.length} ENIs attached to a t3.medium`);
  assert.equal(
    manager.attachedEniCount(),
    attached.length,
    `${when}: the registry counts every attached ENI`,
  );

  for (const eni of ownEnis(truth, instanceId)) {
    const accounted =
      eni.attachment?.instanceId === instanceId || manager.pendingEniDeletes().includes(eni.eniId);
    assert.ok(accounted, `${when}: ENI ${eni.eniId} leaked (neither attached nor pending delete)`);
  }
}

/** ENIs vpcnet created for this instance, by the tags it puts on them. */
function ownEnis(truth: readonly TrueEni[], instanceId: string): TrueEni[] {
  return truth.filter((e) => e.tags[CREATED_BY_TAG] === 'vpcnet' && e.tags[INSTANCE_ID_TAG] === instanceId);
}
