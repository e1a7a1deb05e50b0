import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { WarmPoolTargets } from '../pool/targets.ts';
import { type EniSlots, prefixStep } from './prefix-targets.ts';

const T3_MEDIUM = { maxEnis: 3, ipsPerEni: 6 };
const BASE: WarmPoolTargets & { warmPrefixTarget: number } = {
  warmEniTarget: 1,
  cooldownSeconds: 30,
  warmPrefixTarget: 1,
};
const NO_FALLBACK = { active: false, probeDue: false };

/** An ENI whose prefixes have `inUse` assigned-or-cooling addresses each (all assigned here). */
function eni(device: number, inUse: readonly number[], singles = 0, singlesUsed = 0): EniSlots {
  const assigned = inUse.reduce((a, b) => a + b, 0) + singlesUsed;
  const total = inUse.length * 16 + singles;
  return {
    eniId: `eni-${device}`,
    deviceNumber: device,
    prefixes: inUse.map((n, i) => ({ prefix: `10.0.${device}.${i * 16}/28`, inUse: n })),
    singles,
    singlesAvailable: singles - singlesUsed,
    assigned,
    cooling: 0,
    available: total - assigned,
    total,
  };
}

test('WARM_PREFIX_TARGET=1: one address used in the only prefix asks for a whole new prefix', () => {
  assert.deepEqual(prefixStep([eni(0, [1])], T3_MEDIUM, BASE, 1, new Set(), NO_FALLBACK), {
    kind: 'assign',
    count: 1,
    unit: 'prefixes',
  });
  assert.deepEqual(prefixStep([eni(0, [1, 0])], T3_MEDIUM, BASE, 1, new Set(), NO_FALLBACK), {
    kind: 'none',
  });
});

test('free prefixes beyond WARM_PREFIX_TARGET go back; a prefix with any address in use never does', () => {
  assert.deepEqual(prefixStep([eni(0, [3, 0, 0, 0])], T3_MEDIUM, BASE, 1, new Set(), NO_FALLBACK), {
    kind: 'release',
    count: 2,
    unit: 'prefixes',
  });
  assert.deepEqual(prefixStep([eni(0, [1, 1, 1, 0])], T3_MEDIUM, BASE, 1, new Set(), NO_FALLBACK), {
    kind: 'none',
  });
});

test('WARM_IP_TARGET and MINIMUM_IP_TARGET override WARM_PREFIX_TARGET and round up to whole prefixes', () => {
  const targets = { ...BASE, warmIpTarget: 5, minimumIpTarget: 40 };
  // 16 addresses, 14 used: 2 available (3 short of 5), 16 in total (24 short of 40) → 2 prefixes.
  assert.deepEqual(prefixStep([eni(0, [14])], T3_MEDIUM, targets, 1, new Set(), NO_FALLBACK), {
    kind: 'assign',
    count: 2,
    unit: 'prefixes',
  });
  // 48 addresses, 4 used: releasing a free prefix would leave 28 available but 32 total < 40.
  assert.deepEqual(prefixStep([eni(0, [4, 0, 0])], T3_MEDIUM, targets, 1, new Set(), NO_FALLBACK), {
    kind: 'none',
  });
  // With MINIMUM_IP_TARGET=16 both free prefixes can go: 12 available, 16 in total remain.
  const lower = { ...targets, minimumIpTarget: 16 };
  assert.deepEqual(prefixStep([eni(0, [4, 0, 0])], T3_MEDIUM, lower, 1, new Set(), NO_FALLBACK), {
    kind: 'release',
    count: 2,
    unit: 'prefixes',
  });
});

test('an ENI full of prefixes makes the pool attach another ENI, up to the instance limit', () => {
  const full = eni(0, [16, 16, 16, 16, 16]);
  assert.deepEqual(prefixStep([full], T3_MEDIUM, BASE, 1, new Set(), NO_FALLBACK), { kind: 'attachEni' });
  const all = [full, eni(1, [16, 16, 16, 16, 16]), eni(2, [16, 16, 16, 16, 16])];
  assert.deepEqual(prefixStep(all, T3_MEDIUM, BASE, 3, new Set(), NO_FALLBACK), { kind: 'none' });
});

test('out of fallback, free secondary IPs go back first; in fallback they stay and the pool grows by IPs', () => {
  const mixed = [eni(0, [10], 3, 1)];
  assert.deepEqual(prefixStep(mixed, T3_MEDIUM, BASE, 1, new Set(), NO_FALLBACK), {
    kind: 'release',
    count: 2,
    unit: 'ips',
    modeCleanUp: true,
  });
  const inFallback = prefixStep(mixed, T3_MEDIUM, BASE, 1, new Set(), { active: true, probeDue: false });
  assert.equal(inFallback.kind, 'assign');
  assert.equal('unit' in inFallback && inFallback.unit, 'ips');
});

test('in fallback a due retry asks for a prefix; with every slot taken a free secondary IP makes room', () => {
  const probe = { active: true, probeDue: true };
  assert.deepEqual(
    prefixStep([eni(0, [16], 2, 0)], T3_MEDIUM, { ...BASE, warmPrefixTarget: 0 }, 1, new Set(), probe),
    {
      kind: 'assign',
      count: 1,
      unit: 'prefixes',
    },
  );
  const full = [eni(0, [16], 4, 2), eni(1, [], 5, 5), eni(2, [], 5, 5)];
  assert.deepEqual(prefixStep(full, T3_MEDIUM, BASE, 3, new Set(), probe), {
    kind: 'release',
    count: 1,
    unit: 'ips',
    modeCleanUp: true,
  });
});

test('an idle detachable ENI is freed when the rest still meets WARM_PREFIX_TARGET, never the primary', () => {
  const enis = [eni(0, [5, 0]), eni(1, [0])];
  assert.deepEqual(prefixStep(enis, T3_MEDIUM, BASE, 2, new Set(['eni-1']), NO_FALLBACK), {
    kind: 'freeEni',
    eniId: 'eni-1',
  });
  assert.deepEqual(prefixStep([eni(0, [0, 0])], T3_MEDIUM, BASE, 1, new Set(['eni-0']), NO_FALLBACK), {
    kind: 'release',
    count: 1,
    unit: 'prefixes',
  });
});

test('never releases a prefix that has an address in use, whatever the targets (random pools)', () => {
  const arbEni = (device: number) =>
    fc.array(fc.integer({ min: 0, max: 16 }), { maxLength: 5 }).map((inUse) => eni(device, inUse));
  fc.assert(
    fc.property(
      fc.tuple(arbEni(0), arbEni(1)),
      fc.nat(3),
      fc.nat(40),
      fc.nat(80),
      (enis, warmPrefixTarget, warmIpTarget, minimumIpTarget) => {
        const targets = { ...BASE, warmPrefixTarget, warmIpTarget, minimumIpTarget };
        const d = prefixStep(enis, T3_MEDIUM, targets, 2, new Set(), NO_FALLBACK);
        if (d.kind === 'release' && d.unit === 'prefixes') {
          const free = enis.flatMap((e) => e.prefixes).filter((p) => p.inUse === 0).length;
          assert.ok(d.count <= free, `released ${d.count} of ${free} free prefixes`);
        }
        if (d.kind === 'freeEni') {
          const freed = enis.find((e) => e.eniId === d.eniId);
          assert.equal(freed?.assigned, 0);
        }
      },
    ),
  );
});
