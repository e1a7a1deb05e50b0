// Property: whatever the order of pod allocations and releases, time passing, manager passes and
// failing cloud calls, the pool agrees with the cloud, no ENI leaks, the ENI limit holds, an
// address held by a pod or still cooling is never given back to the cloud, and idle ENIs that are
// freed take no address a pod holds or will be handed (nothing is lost or allocated from them).
// What the link teardown hook sees is collected and asserted after each step: the manager catches
// a hook's errors, so an assertion thrown inside it would never reach fast-check.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { Ledger } from '../../ledger/ledger.ts';
import { MemoryLedgerStore } from '../../ledger/testing/memory-store.ts';
import { CLOUD_MUTATIONS, FakeCloud, type FakeCloudMethod } from '../testing/fake-cloud.ts';
import { AddressPool } from './pool.ts';
import { PoolManager } from './pool-manager.ts';
import type { WarmPoolTargets } from './targets.ts';

const COOLDOWN_S = 30;

type Op =
  | { readonly op: 'allocate'; readonly owner: number }
  | { readonly op: 'release'; readonly owner: number }
  | { readonly op: 'drain' }
  | { readonly op: 'advance'; readonly ms: number }
  | { readonly op: 'pass'; readonly fail: FakeCloudMethod | undefined };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ op: fc.constant('allocate' as const), owner: fc.nat(15) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('release' as const), owner: fc.nat(15) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.nat(40_000) }) },
  // Every pod leaves at once (the end of a burst): what makes ENIs idle.
  { weight: 1, arbitrary: fc.record({ op: fc.constant('drain' as const) }) },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('pass' as const),
      fail: fc.constantFrom<FakeCloudMethod | undefined>(undefined, undefined, undefined, ...CLOUD_MUTATIONS),
    }),
  },
);

const targetsArb: fc.Arbitrary<WarmPoolTargets> = fc.oneof(
  fc.record({ warmEniTarget: fc.nat(2), cooldownSeconds: fc.constant(COOLDOWN_S) }),
  // IP targets weigh double: only they release addresses.
  {
    weight: 2,
    arbitrary: fc.record({
      warmEniTarget: fc.constant(1),
      warmIpTarget: fc.nat(4),
      minimumIpTarget: fc.nat(6),
      cooldownSeconds: fc.constant(COOLDOWN_S),
    }),
  },
  fc.record({
    warmEniTarget: fc.constant(1),
    maxEni: fc.integer({ min: 1, max: 2 }),
    cooldownSeconds: fc.constant(COOLDOWN_S),
  }),
);

test('the manager keeps pool and cloud in agreement, never gives back a held or cooling address, and frees only idle ENIs', async () => {
  let freedEnis = 0;
  await fc.assert(
    fc.asyncProperty(targetsArb, fc.array(opArb, { maxLength: 60, size: 'max' }), async (targets, ops) => {
      const cloud = new FakeCloud({ limits: { maxEnis: 3, ipsPerEni: 4 } });
      const clock = { t: 0, now: () => clock.t };
      const pool = new AddressPool({ cooldownMs: COOLDOWN_S * 1000 });
      const quiet = { info() {}, warn() {}, error() {} };
      const held = new Map<string, string>(); // owner → ip
      const freedAt = new Map<string, number>(); // ip → release time
      const coolingNow = (ip: string) => {
        const at = freedAt.get(ip);
        return at !== undefined && clock.t - at < COOLDOWN_S * 1000;
      };
      /** Broken invariants seen where an assertion could not reach fast-check (inside a hook). */
      const violations: string[] = [];
      const ledger = await Ledger.open(new MemoryLedgerStore(), { now: () => clock.t });
      const manager = new PoolManager({
        cloud,
        pool,
        clock,
        log: quiet,
        metadata: cloud.meta,
        limits: cloud.limits,
        targets,
        ledger,
        onEniDetaching: async (eni) => {
          if (eni.deviceNumber === 0) violations.push('the primary ENI is being freed');
          if (pool.eni(eni.eniId) !== undefined)
            violations.push(`${eni.eniId} still in the pool as its link goes`);
          if (!manager.protectedAddresses().has(eni.primaryIp))
            violations.push(`${eni.eniId}'s rule unprotected while it is torn down`);
          const ips = new Set(eni.secondaryIps);
          for (const [who, ip] of held)
            if (ips.has(ip)) violations.push(`${eni.eniId} freed with ${ip} held by ${who}`);
          for (const ip of freedAt.keys())
            if (coolingNow(ip) && ips.has(ip)) violations.push(`${eni.eniId} freed with ${ip} cooling`);
        },
      });
      await manager.init();

      for (const o of ops) {
        const owner = `vpcnet/c${'owner' in o ? o.owner : 0}/eth0`;
        switch (o.op) {
          case 'allocate': {
            const got = manager.allocate(owner);
            if (got) {
              held.set(owner, got.ip);
              assert.ok(
                cloud.attached().some((e) => e.eniId === got.eniId && e.secondaryIps.includes(got.ip)),
                `${got.ip} handed out from ${got.eniId}, which does not hold it`,
              );
            }
            break;
          }
          case 'release': {
            const ip = held.get(owner);
            if (ip === undefined) break;
            manager.release(ip);
            held.delete(owner);
            freedAt.set(ip, clock.t);
            break;
          }
          case 'drain':
            for (const [who, ip] of held) {
              manager.release(ip);
              held.delete(who);
              freedAt.set(ip, clock.t);
            }
            break;
          case 'advance':
            clock.t += o.ms;
            break;
          case 'pass': {
            if (o.fail) cloud.failNext(o.fail);
            const done = await manager.runPass().catch((err: unknown) => {
              // Only the injected throttle may fail a pass; anything else is a bug in the manager.
              if (!String(err).includes('RequestLimitExceeded'))
                violations.push(`pass failed: ${String(err)}`);
              return undefined;
            });
            if (done?.kind === 'freeEni') freedEnis++;
            break;
          }
        }

        assert.deepEqual(violations, [], `after ${o.op}`);

        const attached = cloud.attached();
        assert.equal(attached[0]?.eniId, 'eni-primary', 'the primary ENI stays');
        const detached = [...cloud.enis.keys()].filter((id) => !attached.some((e) => e.eniId === id));
        assert.deepEqual(
          detached,
          manager.pendingEniDeletes(),
          'an unattached ENI is one still being deleted',
        );
        for (const e of pool.enis())
          assert.ok(cloud.enis.get(e.eniId)?.attachment, `${e.eniId} in the pool is attached`);
        assert.ok(attached.length <= Math.min(3, targets.maxEni ?? 3), 'the ENI limit holds');
        const setupDone = new Set(pool.enis().map((e) => e.eniId));
        for (const eni of attached) {
          if (!setupDone.has(eni.eniId)) continue;
          assert.deepEqual(
            [...pool.addresses(eni.eniId).keys()].sort(),
            [...eni.secondaryIps].sort(),
            `pool and cloud agree on ${eni.eniId}`,
          );
        }
        const inCloud = new Set(attached.flatMap((e) => e.secondaryIps));
        for (const [who, ip] of held) {
          assert.ok(inCloud.has(ip), `${ip} held by ${who} was given back to the cloud`);
          assert.deepEqual(pool.state(ip), { kind: 'assigned', owner: who });
        }
        const recorded = new Set(ledger.coolingAddresses().map((c) => c.ip));
        for (const ip of freedAt.keys()) {
          if (!coolingNow(ip)) continue;
          assert.ok(inCloud.has(ip), `${ip} given back while cooling`);
          assert.ok(recorded.has(ip), `${ip} cooling without a durable record`);
        }
        // One lifecycle: the pool holds exactly the ready ENIs; every attached ENI is registered
        // as attached, and each ENI's link rule stays protected while it is configured.
        const states = new Map(manager.enis().map((e) => [e.eniId, e.state]));
        assert.deepEqual(
          pool.enis().map((e) => e.eniId),
          [...states].filter(([, st]) => st === 'ready').map(([id]) => id),
        );
        for (const eni of attached)
          assert.ok(
            ['configuring', 'ready'].includes(states.get(eni.eniId) ?? ''),
            `${eni.eniId} registered`,
          );
        for (const e of pool.enis())
          assert.ok(manager.protectedAddresses().has(e.primaryIp), `${e.eniId}'s rule is protected`);
      }
      await manager.stop();
    }),
    { numRuns: 300 },
  );
  assert.ok(freedEnis > 0, 'the runs freed some ENIs');
});
