// Property: under any sequence of allocations, releases (including stale ones by a former
// owner), unreservations, pool growth/shrink and time passing, an address is never owned by two
// attachments, a freed address is not handed out before its cooldown, allocate finds an address
// whenever one is allocatable, and the stats add up.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { AddressPool } from './pool.ts';

const COOLDOWN = 1000;

type Op =
  | { readonly op: 'allocate'; readonly owner: number }
  | { readonly op: 'release'; readonly owner: number; readonly asOwner: number | undefined }
  | { readonly op: 'unreserve'; readonly owner: number }
  | { readonly op: 'advance'; readonly ms: number }
  | { readonly op: 'grow'; readonly eni: number; readonly count: number }
  | { readonly op: 'shrink'; readonly count: number }
  | { readonly op: 'expire' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant('allocate' as const), owner: fc.nat(12) }) },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('release' as const),
      owner: fc.nat(12),
      asOwner: fc.option(fc.nat(12), { nil: undefined }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('unreserve' as const), owner: fc.nat(12) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.nat(1500) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('grow' as const),
      eni: fc.nat(2),
      count: fc.integer({ min: 1, max: 3 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('shrink' as const), count: fc.integer({ min: 1, max: 3 }) }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('expire' as const) }) },
);

test('the pool never double-allocates, honours cooldowns and keeps its stats consistent', () => {
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 80, size: 'max' }), (ops) => {
      const pool = new AddressPool({ cooldownMs: COOLDOWN });
      for (const d of [0, 1, 2]) {
        pool.addEni({
          eniId: `eni-${d}`,
          mac: `02:00:00:00:00:0${d}`,
          deviceNumber: d,
          subnetId: 'subnet-1',
          primaryIp: `10.0.${d}.1`,
          subnetCidr: '10.0.0.0/16',
        });
      }
      let now = 0;
      let nextHost = 10;
      // The model: who holds what, and when each address was last freed by a pod.
      const holder = new Map<string, string>(); // ip → owner
      const freedAt = new Map<string, number>(); // ip → time of release (cooldown start)
      const inPool = new Set<string>();

      const allocatable = () =>
        [...inPool].filter(
          (ip) => !holder.has(ip) && now - (freedAt.get(ip) ?? Number.NEGATIVE_INFINITY) >= COOLDOWN,
        );

      for (const o of ops) {
        const owner = `vpcnet/c${'owner' in o ? o.owner : 0}/eth0`;
        switch (o.op) {
          case 'allocate': {
            const held = [...holder].find(([, h]) => h === owner)?.[0];
            const expectAny = held !== undefined || allocatable().length > 0;
            const got = pool.allocate(owner, now);
            assert.equal(got !== undefined, expectAny, 'allocate finds an address iff one is allocatable');
            if (!got) break;
            if (held !== undefined) {
              assert.equal(got.ip, held, 'a retried ADD keeps its address');
              break;
            }
            assert.ok(!holder.has(got.ip), `${got.ip} handed out while held by ${holder.get(got.ip)}`);
            const f = freedAt.get(got.ip);
            assert.ok(
              f === undefined || now - f >= COOLDOWN,
              `${got.ip} handed out ${now - (f ?? 0)} ms after release`,
            );
            holder.set(got.ip, owner);
            break;
          }
          case 'release': {
            const ip = [...holder].find(([, h]) => h === owner)?.[0];
            if (ip === undefined) break;
            const asOwner = o.asOwner === undefined ? undefined : `vpcnet/c${o.asOwner}/eth0`;
            const res = pool.release(ip, now, asOwner);
            if (asOwner !== undefined && asOwner !== owner) {
              assert.equal(res, undefined, 'a stale release by another owner frees nothing');
              break;
            }
            assert.equal(res?.owner, owner);
            holder.delete(ip);
            freedAt.set(ip, now);
            break;
          }
          case 'unreserve': {
            const ip = [...holder].find(([, h]) => h === owner)?.[0];
            if (ip === undefined) break;
            assert.equal(pool.unreserve(ip), true);
            holder.delete(ip);
            break;
          }
          case 'advance':
            now += o.ms;
            break;
          case 'grow': {
            const ips = Array.from({ length: o.count }, () => `10.0.${o.eni}.${nextHost++}`);
            pool.addAddresses(`eni-${o.eni}`, ips);
            for (const ip of ips) inPool.add(ip);
            break;
          }
          case 'shrink': {
            const pick = pool.excessFree(o.count, now);
            if (!pick) {
              assert.equal(allocatable().length, 0);
              break;
            }
            for (const ip of pick.ips) assert.ok(allocatable().includes(ip), `${ip} released while not free`);
            pool.removeAddresses(pick.eni.eniId, pick.ips);
            for (const ip of pick.ips) {
              inPool.delete(ip);
              freedAt.delete(ip);
            }
            break;
          }
          case 'expire':
            for (const ip of pool.expireCooling(now)) {
              const f = freedAt.get(ip);
              assert.ok(f !== undefined && now - f >= COOLDOWN, `${ip} expired early`);
            }
            break;
        }

        // Invariants after every step.
        const owners = new Map<string, string>();
        let total = 0;
        for (const eni of pool.enis()) {
          for (const [ip, state] of pool.addresses(eni.eniId)) {
            total++;
            if (state.kind !== 'assigned') continue;
            assert.ok(!owners.has(state.owner), `${state.owner} holds ${owners.get(state.owner)} and ${ip}`);
            owners.set(state.owner, ip);
            assert.equal(holder.get(ip), state.owner);
            assert.equal(pool.addressOf(state.owner), ip);
          }
        }
        assert.equal(owners.size, holder.size);
        const s = pool.stats(now);
        assert.equal(s.total, total);
        assert.equal(s.total, inPool.size);
        assert.equal(s.assigned + s.cooling + s.available, s.total);
        assert.equal(s.assigned, holder.size);
        assert.equal(s.available, allocatable().length);
        const perEni = pool.eniStats(now);
        assert.equal(
          perEni.reduce((n, e) => n + e.total, 0),
          s.total,
        );
      }
    }),
    { numRuns: 500 },
  );
});
