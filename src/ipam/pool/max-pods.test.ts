import assert from 'node:assert/strict';
import { test } from 'node:test';
import { maxPods } from './max-pods.ts';

test('secondary-IP mode: ENIs × (addresses per ENI − 1) + 2, as upstream (t3.medium 17, m5.large 29)', () => {
  assert.equal(maxPods({ maxEnis: 3, ipsPerEni: 6 }, { prefixDelegation: false }), 17);
  assert.equal(maxPods({ maxEnis: 3, ipsPerEni: 10 }, { prefixDelegation: false }), 29);
  assert.equal(maxPods({ maxEnis: 8, ipsPerEni: 30 }, { prefixDelegation: false }), 234);
});

test('prefix mode: 16 addresses per slot, capped at 110 below 30 vCPUs and 250 above', () => {
  // t3.medium: 3 × 5 × 16 + 2 = 242, capped to 110.
  assert.equal(maxPods({ maxEnis: 3, ipsPerEni: 6 }, { prefixDelegation: true, vcpus: 2 }), 110);
  // t3.small-like (3 ENIs × 4): 3 × 3 × 16 + 2 = 146 → 110.
  assert.equal(maxPods({ maxEnis: 3, ipsPerEni: 4 }, { prefixDelegation: true, vcpus: 2 }), 110);
  // A tiny type under the cap keeps its own figure: 2 × 1 × 16 + 2 = 34.
  assert.equal(maxPods({ maxEnis: 2, ipsPerEni: 2 }, { prefixDelegation: true, vcpus: 1 }), 34);
  // m5.8xlarge-like (32 vCPUs, 8 ENIs × 30): 3714 → 250.
  assert.equal(maxPods({ maxEnis: 8, ipsPerEni: 30 }, { prefixDelegation: true, vcpus: 32 }), 250);
});

test('the vCPU cap follows the calculator: 30 vCPUs still get 110, more get 250', () => {
  const big = { maxEnis: 8, ipsPerEni: 30 };
  assert.equal(maxPods(big, { prefixDelegation: true, vcpus: 30 }), 110);
  assert.equal(maxPods(big, { prefixDelegation: true, vcpus: 31 }), 250);
});

test('custom networking: the primary ENI carries no pods, one ENI fewer counts (m5.large 20, t3.medium 12)', () => {
  // Upstream's calculator with --cni-custom-networking-enabled: m5.large (3 ENIs × 10) gives 20.
  assert.equal(
    maxPods({ maxEnis: 3, ipsPerEni: 10 }, { prefixDelegation: false, customNetworking: true }),
    20,
  );
  assert.equal(
    maxPods({ maxEnis: 3, ipsPerEni: 6 }, { prefixDelegation: false, customNetworking: true }),
    12,
  );
  // Prefix mode: t3.medium 2 × 5 × 16 + 2 = 162 → 110; a 2-ENI type keeps 1 × 1 × 16 + 2 = 18.
  assert.equal(
    maxPods({ maxEnis: 3, ipsPerEni: 6 }, { prefixDelegation: true, customNetworking: true, vcpus: 2 }),
    110,
  );
  assert.equal(
    maxPods({ maxEnis: 2, ipsPerEni: 2 }, { prefixDelegation: true, customNetworking: true, vcpus: 1 }),
    18,
  );
  // A type with one ENI has no room for pods at all beyond the host-network two.
  assert.equal(maxPods({ maxEnis: 1, ipsPerEni: 4 }, { prefixDelegation: false, customNetworking: true }), 2);
});
