// Shrinking decisions: which idle ENI to free (eniToFree) and how it combines with decide()
// (nextPoolStep). Growth and parsing are in targets.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { EniStats } from './pool.ts';
import { eniToFree, nextPoolStep, type WarmPoolTargets } from './targets.ts';

const t3small = { maxEnis: 3, ipsPerEni: 4 };
const eniMode: WarmPoolTargets = { warmEniTarget: 1, cooldownSeconds: 30 };

/** One ENI's stats: `eni-<device>`, `total` addresses of which `assigned` and `cooling`. */
function eni(device: number, total: number, assigned = 0, cooling = 0): EniStats {
  return {
    eniId: `eni-${device}`,
    deviceNumber: device,
    total,
    assigned,
    cooling,
    available: total - assigned - cooling,
  };
}

const ours = new Set(['eni-1', 'eni-2']);

describe('eniToFree', () => {
  // Rows follow the upstream's getDeletableENI (pkg/ipamd/datastore/data_store.go): never the
  // primary, none with pods or cooling addresses, none the IP targets still need; and its
  // shouldRemoveExtraENIs for WARM_ENI_TARGET: keep that many ENIs' worth available.
  const cases: [string, EniStats[], WarmPoolTargets, ReadonlySet<string>, string | undefined][] = [
    [
      'WARM_ENI_TARGET=1, all pods gone from 3 full ENIs: the highest device goes first',
      [eni(0, 3), eni(1, 3), eni(2, 3)],
      eniMode,
      ours,
      'eni-2',
    ],
    [
      'WARM_ENI_TARGET=1, one ENI left over: nothing while the rest holds less than an ENI’s worth',
      [eni(0, 3, 1), eni(1, 3)],
      eniMode,
      ours,
      undefined,
    ],
    [
      'WARM_ENI_TARGET=1, the rest holds exactly an ENI’s worth: free it',
      [eni(0, 3), eni(1, 3)],
      eniMode,
      ours,
      'eni-1',
    ],
    [
      'WARM_ENI_TARGET=2 keeps two ENIs’ worth',
      [eni(0, 3), eni(1, 3), eni(2, 3)],
      { ...eniMode, warmEniTarget: 2 },
      ours,
      'eni-2',
    ],
    [
      'WARM_ENI_TARGET=2 with a pod on the primary: the rest would hold too little',
      [eni(0, 3, 1), eni(1, 3), eni(2, 3)],
      { ...eniMode, warmEniTarget: 2 },
      ours,
      undefined,
    ],
    [
      'WARM_ENI_TARGET=0 keeps one available address, else the pool would grow again at once',
      [eni(0, 3, 3), eni(1, 3)],
      { ...eniMode, warmEniTarget: 0 },
      ours,
      undefined,
    ],
    [
      'WARM_ENI_TARGET=0 frees an idle ENI while another address is available',
      [eni(0, 3, 2), eni(1, 3)],
      { ...eniMode, warmEniTarget: 0 },
      ours,
      'eni-1',
    ],
    [
      'an ENI with an assigned address is never freed',
      [eni(0, 3), eni(1, 3), eni(2, 3, 1)],
      eniMode,
      ours,
      'eni-1',
    ],
    [
      'an ENI with a cooling address is never freed (convergence: it stays until its cooldown ends)',
      [eni(0, 3), eni(1, 3, 0, 1), eni(2, 3, 0, 1)],
      eniMode,
      ours,
      undefined,
    ],
    [
      'the primary ENI (device 0) is never freed, even when listed as detachable',
      [eni(0, 3), eni(1, 3, 1)],
      { ...eniMode, warmIpTarget: 1 },
      new Set(['eni-0', 'eni-1']),
      undefined,
    ],
    [
      'an ENI vpcnet did not create is left alone',
      [eni(0, 3), eni(1, 3), eni(2, 3)],
      eniMode,
      new Set(['eni-1']),
      'eni-1',
    ],
    [
      'WARM_IP_TARGET=1: an idle ENI goes when the rest keeps one available',
      [eni(0, 3, 2), eni(1, 2)],
      { ...eniMode, warmIpTarget: 1 },
      ours,
      'eni-1',
    ],
    [
      'WARM_IP_TARGET=2: an idle ENI stays while the rest has fewer available',
      [eni(0, 3, 2), eni(1, 2)],
      { ...eniMode, warmIpTarget: 2 },
      ours,
      undefined,
    ],
    [
      'WARM_IP_TARGET counts available addresses only: cooling ones elsewhere do not count',
      [eni(0, 3, 1, 2), eni(1, 2)],
      { ...eniMode, warmIpTarget: 1 },
      ours,
      undefined,
    ],
    [
      'MINIMUM_IP_TARGET: an idle ENI stays while the rest holds fewer addresses in total',
      [eni(0, 3), eni(1, 3)],
      { ...eniMode, warmIpTarget: 1, minimumIpTarget: 4 },
      ours,
      undefined,
    ],
    [
      'MINIMUM_IP_TARGET met by the rest: free it',
      [eni(0, 3), eni(1, 3)],
      { ...eniMode, warmIpTarget: 1, minimumIpTarget: 3 },
      ours,
      'eni-1',
    ],
    [
      'an ENI without addresses is freed when the rest meets the targets',
      [eni(0, 1), eni(1, 0), eni(2, 0)],
      { ...eniMode, warmIpTarget: 1 },
      ours,
      'eni-2',
    ],
  ];
  for (const [name, enis, targets, detachable, expected] of cases) {
    test(name, () => {
      assert.equal(eniToFree(enis, t3small, targets, detachable), expected);
    });
  }

  test('what remains after freeing never makes decide() grow again', () => {
    const targetsList: WarmPoolTargets[] = [
      eniMode,
      { ...eniMode, warmEniTarget: 0 },
      { ...eniMode, warmEniTarget: 2 },
      { ...eniMode, warmIpTarget: 1 },
      { ...eniMode, warmIpTarget: 2, minimumIpTarget: 5 },
      { ...eniMode, minimumIpTarget: 4 },
    ];
    for (const targets of targetsList) {
      for (let a0 = 0; a0 <= 3; a0++) {
        for (let c0 = 0; a0 + c0 <= 3; c0++) {
          for (let t1 = 0; t1 <= 3; t1++) {
            const enis = [eni(0, 3, a0, c0), eni(1, t1), eni(2, 3)];
            const freed = eniToFree(enis, t3small, targets, ours);
            if (freed === undefined) continue;
            const rest = enis.filter((e) => e.eniId !== freed);
            const d = nextPoolStep(rest, t3small, targets, rest.length, ours);
            assert.ok(
              d.kind !== 'assign' && d.kind !== 'attachEni',
              `${JSON.stringify(targets)} ${JSON.stringify(enis)}: freed ${freed}, then ${d.kind}`,
            );
          }
        }
      }
    }
  });
});

describe('nextPoolStep', () => {
  test('growing comes first: no ENI is freed while the pool is short', () => {
    const d = nextPoolStep([eni(0, 3, 3), eni(1, 0)], t3small, eniMode, 2, ours);
    assert.deepEqual(d, { kind: 'assign', count: 3 });
  });

  test('an idle ENI is freed before excess addresses are released one ENI at a time', () => {
    const targets = { ...eniMode, warmIpTarget: 1 };
    assert.deepEqual(nextPoolStep([eni(0, 3), eni(1, 3)], t3small, targets, 2, ours), {
      kind: 'freeEni',
      eniId: 'eni-1',
    });
    assert.deepEqual(nextPoolStep([eni(0, 3)], t3small, targets, 1, ours), { kind: 'release', count: 2 });
  });

  test('with nothing to free, the pool decision stands', () => {
    assert.deepEqual(nextPoolStep([eni(0, 3, 1), eni(1, 3, 1)], t3small, eniMode, 2, ours), { kind: 'none' });
  });
});
