import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { PoolStats } from './pool.ts';
import { decide, type WarmPoolTargets } from './targets.ts';

// t3.small: 3 ENIs × 4 addresses (3 secondary).
const t3small = { maxEnis: 3, ipsPerEni: 4 };
const eniMode: WarmPoolTargets = { warmEniTarget: 1, cooldownSeconds: 30 };

function stats(enis: number, total: number, assigned: number, cooling = 0): PoolStats {
  return { enis, total, assigned, cooling, available: total - assigned - cooling };
}

describe('decide', () => {
  // Rows follow the upstream's docs/eni-and-ip-target.md examples for t3.small.
  const cases: [string, PoolStats, number, WarmPoolTargets, ReturnType<typeof decide>][] = [
    [
      'WARM_ENI_TARGET=1, empty primary ENI: fill it',
      stats(1, 0, 0),
      1,
      eniMode,
      { kind: 'assign', count: 3 },
    ],
    ['WARM_ENI_TARGET=1, a full ENI free: nothing to do', stats(1, 3, 0), 1, eniMode, { kind: 'none' }],
    [
      'WARM_ENI_TARGET=1, 5 pods on 2 full ENIs: attach a third',
      stats(2, 6, 5),
      2,
      eniMode,
      { kind: 'attachEni' },
    ],
    [
      'WARM_ENI_TARGET=1, third ENI attached: fill it',
      stats(3, 6, 5),
      3,
      eniMode,
      { kind: 'assign', count: 3 },
    ],
    ['WARM_ENI_TARGET=1, 9 pods, all ENIs full: at the limit', stats(3, 9, 9), 3, eniMode, { kind: 'none' }],
    [
      'WARM_ENI_TARGET=0 grows only when nothing is available',
      stats(1, 0, 0),
      1,
      { warmEniTarget: 0, cooldownSeconds: 30 },
      { kind: 'assign', count: 3 },
    ],
    [
      'WARM_ENI_TARGET=0 with one available: nothing to do',
      stats(1, 2, 1),
      1,
      { warmEniTarget: 0, cooldownSeconds: 30 },
      { kind: 'none' },
    ],
    ['WARM_ENI_TARGET mode never releases addresses', stats(3, 9, 0), 3, eniMode, { kind: 'none' }],
    [
      'WARM_IP_TARGET=1 MINIMUM_IP_TARGET=1, empty: assign one',
      stats(1, 0, 0),
      1,
      { ...eniMode, warmIpTarget: 1, minimumIpTarget: 1 },
      { kind: 'assign', count: 1 },
    ],
    [
      'WARM_IP_TARGET=2 MINIMUM_IP_TARGET=5, empty: the minimum wins, capped by the ENI room',
      stats(1, 0, 0),
      1,
      { ...eniMode, warmIpTarget: 2, minimumIpTarget: 5 },
      { kind: 'assign', count: 3 },
    ],
    [
      'WARM_IP_TARGET=2 MINIMUM_IP_TARGET=5, primary full: attach',
      stats(1, 3, 0),
      1,
      { ...eniMode, warmIpTarget: 2, minimumIpTarget: 5 },
      { kind: 'attachEni' },
    ],
    [
      'WARM_IP_TARGET=2 MINIMUM_IP_TARGET=5, 5 pods: two warm on top',
      stats(2, 6, 5),
      2,
      { ...eniMode, warmIpTarget: 2, minimumIpTarget: 5 },
      { kind: 'attachEni' },
    ],
    [
      'WARM_IP_TARGET=2 MINIMUM_IP_TARGET=5, 5 pods, third ENI: assign one',
      stats(3, 6, 5),
      3,
      { ...eniMode, warmIpTarget: 2, minimumIpTarget: 5 },
      { kind: 'assign', count: 1 },
    ],
    [
      'WARM_IP_TARGET=1: excess available addresses are released down to the target',
      stats(2, 6, 2),
      2,
      { ...eniMode, warmIpTarget: 1 },
      { kind: 'release', count: 3 },
    ],
    [
      'MINIMUM_IP_TARGET bounds the release',
      stats(2, 6, 0),
      2,
      { ...eniMode, warmIpTarget: 1, minimumIpTarget: 4 },
      { kind: 'release', count: 2 },
    ],
    [
      'cooling addresses are neither available nor released',
      stats(2, 6, 1, 4),
      2,
      { ...eniMode, warmIpTarget: 1 },
      { kind: 'none' },
    ],
    [
      'cooling addresses do not count as available: grow past them',
      stats(2, 5, 1, 4),
      2,
      { ...eniMode, warmIpTarget: 1 },
      { kind: 'assign', count: 1 },
    ],
    [
      'WARM_IP_TARGET=0 and MINIMUM_IP_TARGET=0 mean unset: WARM_ENI_TARGET applies',
      stats(1, 0, 0),
      1,
      { ...eniMode, warmIpTarget: 0, minimumIpTarget: 0 },
      { kind: 'assign', count: 3 },
    ],
    [
      'MAX_ENI below the instance limit stops attaching',
      stats(2, 6, 6),
      2,
      { ...eniMode, maxEni: 2 },
      { kind: 'none' },
    ],
    ['unmanaged ENIs occupy device slots', stats(1, 3, 3), 3, eniMode, { kind: 'none' }],
  ];
  for (const [name, s, eniCount, targets, expected] of cases) {
    test(name, () => {
      assert.deepEqual(decide(s, t3small, targets, eniCount), expected);
    });
  }

  test('p3dn.24xlarge, WARM_IP_TARGET=5 MINIMUM_IP_TARGET=10: 7 pods grow the pool to 12, 45 pods spill onto a second ENI', () => {
    const p3dn = { maxEnis: 15, ipsPerEni: 50 };
    const targets = { ...eniMode, warmIpTarget: 5, minimumIpTarget: 10 };
    assert.deepEqual(decide(stats(1, 10, 7), p3dn, targets, 1), { kind: 'assign', count: 2 });
    assert.deepEqual(decide(stats(1, 49, 45), p3dn, targets, 1), { kind: 'attachEni' });
    assert.deepEqual(decide(stats(2, 49, 45), p3dn, targets, 2), { kind: 'assign', count: 1 });
    assert.deepEqual(decide(stats(2, 50, 45), p3dn, targets, 2), { kind: 'none' });
  });

  test('ADDs waiting beyond what is available grow the pool whatever the targets keep warm', () => {
    const minimumOnly = { ...eniMode, minimumIpTarget: 3 };
    // MINIMUM_IP_TARGET met, every free address cooling (or quarantined after a recovery).
    assert.deepEqual(decide(stats(1, 3, 1, 2), t3small, minimumOnly, 1), { kind: 'none' }, 'nobody waits');
    assert.deepEqual(decide(stats(1, 3, 1, 2), t3small, minimumOnly, 1, 2), { kind: 'attachEni' });
    assert.deepEqual(decide(stats(2, 3, 1, 2), t3small, minimumOnly, 2, 2), { kind: 'assign', count: 2 });
    assert.deepEqual(decide(stats(2, 4, 1, 2), t3small, minimumOnly, 2, 2), { kind: 'assign', count: 1 });
    // A burst beyond WARM_IP_TARGET asks for the burst at once.
    const warm1 = { ...eniMode, warmIpTarget: 1 };
    assert.deepEqual(decide(stats(2, 4, 3), t3small, warm1, 2, 3), { kind: 'assign', count: 2 });
    // WARM_ENI_TARGET=0 grows when the waiters outnumber what is free; =1 fills for them as before.
    const eni0 = { ...eniMode, warmEniTarget: 0 };
    assert.deepEqual(decide(stats(2, 4, 3), t3small, eni0, 2), { kind: 'none' });
    assert.deepEqual(decide(stats(2, 4, 3), t3small, eni0, 2, 2), { kind: 'assign', count: 2 });
    // At the limits the waiters wait.
    assert.deepEqual(decide(stats(3, 9, 7, 2), t3small, minimumOnly, 3, 4), { kind: 'none' });
  });

  test('never releases below the warm target nor more than is available', () => {
    for (let assigned = 0; assigned <= 9; assigned++) {
      for (let cooling = 0; assigned + cooling <= 9; cooling++) {
        const s = stats(3, 9, assigned, cooling);
        const d = decide(s, t3small, { ...eniMode, warmIpTarget: 2, minimumIpTarget: 3 }, 3);
        if (d.kind !== 'release') continue;
        assert.ok(d.count <= s.available - 2, `released ${d.count} of ${s.available} available`);
        assert.ok(s.total - d.count >= 3, 'kept the minimum');
      }
    }
  });
});
