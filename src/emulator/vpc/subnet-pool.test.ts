import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { parseIpv4 } from '../../infra/ipv4.ts';
import { seededRandom } from './ids.ts';
import { prefixAddresses, SubnetPool } from './subnet-pool.ts';

const spec = { subnetId: 'subnet-1', cidr: '10.0.1.0/28', availabilityZone: 'us-west-2a' };

test('a /28 hands out exactly the 11 addresses AWS does not reserve', () => {
  const pool = new SubnetPool(spec);
  assert.equal(pool.availableCount, 11);
  const ips = pool.allocate(11);
  assert.deepEqual(ips, [
    '10.0.1.4',
    '10.0.1.5',
    '10.0.1.6',
    '10.0.1.7',
    '10.0.1.8',
    '10.0.1.9',
    '10.0.1.10',
    '10.0.1.11',
    '10.0.1.12',
    '10.0.1.13',
    '10.0.1.14',
  ]);
  assert.equal(pool.gateway, '10.0.1.1');
});

test('allocation beyond the free count fails with InsufficientFreeAddressesInSubnet and takes nothing', () => {
  const pool = new SubnetPool(spec);
  pool.allocate(10);
  assert.throws(() => pool.allocate(2), { code: 'InsufficientFreeAddressesInSubnet' });
  assert.equal(pool.availableCount, 1);
});

test('claiming a reserved, foreign or used address fails with InvalidParameterValue', () => {
  const pool = new SubnetPool(spec);
  for (const ip of ['10.0.1.0', '10.0.1.1', '10.0.1.2', '10.0.1.3', '10.0.1.15', '10.0.2.4', 'nope']) {
    assert.throws(() => pool.claim([ip]), { code: 'InvalidParameterValue' }, ip);
  }
  pool.claim(['10.0.1.9']);
  assert.throws(() => pool.claim(['10.0.1.9']), { code: 'InvalidParameterValue' });
  assert.ok(!pool.allocate(10).includes('10.0.1.9'));
});

test('a released address becomes available again', () => {
  const pool = new SubnetPool(spec);
  const [ip] = pool.allocate(1);
  pool.release([ip!]);
  assert.equal(pool.availableCount, 11);
  assert.equal(pool.isInUse(ip!), false);
});

test('random allocate/release interleavings never hand out an address twice', () => {
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 1, max: 4 })), { maxLength: 60 }),
      (steps) => {
        const pool = new SubnetPool(spec);
        const held = new Set<string>();
        for (const [allocate, n] of steps) {
          if (allocate) {
            if (n > pool.availableCount) continue;
            for (const ip of pool.allocate(n)) {
              assert.ok(!held.has(ip), `${ip} handed out twice`);
              held.add(ip);
            }
          } else {
            const some = [...held].slice(0, n);
            pool.release(some);
            for (const ip of some) held.delete(ip);
          }
          assert.equal(pool.availableCount, 11 - held.size);
        }
      },
    ),
  );
});

const wide = { subnetId: 'subnet-2', cidr: '10.0.2.0/24', availabilityZone: 'us-west-2a' };

test('a /28 prefix is the lowest aligned block of 16 free addresses, never one with reserved addresses', () => {
  const pool = new SubnetPool(wide);
  // 10.0.2.0/28 holds the network, router, DNS and reserved addresses; the last block the broadcast.
  assert.equal(pool.allocatePrefix(), '10.0.2.16/28');
  pool.allocate(1); // 10.0.2.4
  pool.claim(['10.0.2.40']);
  assert.equal(pool.allocatePrefix(), '10.0.2.48/28', 'the block holding .40 is skipped');
  assert.equal(pool.isInUse('10.0.2.63'), true);
  assert.equal(pool.availableCount, 256 - 5 - 16 - 1 - 1 - 16);
});

test('EC2 never picks an address of a CIDR reservation on its own; a named one outside a prefix reservation it gives', () => {
  const pool = new SubnetPool(wide);
  pool.reservations.add('scr-1', '10.0.2.0/26', 'explicit');
  pool.reservations.add('scr-2', '10.0.2.64/27', 'prefix');
  const picked = pool.allocate(10).map(parseIpv4);
  assert.ok(
    picked.every((a) => a >= parseIpv4('10.0.2.96')),
    'count picks skip both reservations',
  );
  pool.claim(['10.0.2.9']);
  assert.throws(
    () => pool.claim(['10.0.2.70']),
    { code: 'InvalidParameterValue' },
    'a /32 in a prefix reservation',
  );
  assert.equal(pool.allocatePrefix(), '10.0.2.64/28', 'prefix delegation takes the prefix reservation first');
  assert.equal(pool.allocatePrefix(), '10.0.2.80/28');
  // Outside the reservations now: past the blocks the count picks above broke.
  assert.equal(pool.allocatePrefix(), '10.0.2.112/28');
  pool.claimPrefix('10.0.2.16/28');
  assert.equal(pool.isInUse('10.0.2.31'), true, 'an explicit reservation takes a named prefix');
});

test('the ground truth counts prefix-reservation blocks as free and explicit ones as not', () => {
  const pool = new SubnetPool(wide);
  pool.reservations.add('scr-1', '10.0.2.16/28', 'explicit');
  pool.reservations.add('scr-2', '10.0.2.32/28', 'prefix');
  pool.claim(['10.0.2.50']);
  const free = pool.freePrefixBlocks();
  assert.equal(free.includes('10.0.2.16/28'), false);
  assert.equal(free.includes('10.0.2.32/28'), true);
  assert.equal(free.includes('10.0.2.48/28'), false);
  assert.equal(free.length, 16 - 2 - 1 - 1, 'first and last blocks hold AWS-reserved addresses');
  assert.equal(pool.freeAddressCount(), 256 - 5 - 16 - 1);
});

test('a subnet given a random source picks addresses by count at random, the same for the same seed', () => {
  const picks = (seed: number) => {
    const pool = new SubnetPool(wide);
    pool.pickAtRandom(seededRandom(seed));
    return pool.allocate(8);
  };
  const a = picks(7);
  assert.deepEqual(picks(7), a);
  assert.notDeepEqual(picks(8), a);
  assert.notDeepEqual(a, new SubnetPool(wide).allocate(8), 'not simply the lowest');
  const lowest = parseIpv4('10.0.2.4');
  assert.ok(
    a.map(parseIpv4).some((x) => x > lowest + 16),
    'spread over the subnet',
  );
});

test('a released prefix frees its 16 addresses for the next prefix', () => {
  const pool = new SubnetPool(wide);
  const before = pool.availableCount;
  const prefix = pool.allocatePrefix();
  assert.equal(pool.availableCount, before - 16);
  pool.releasePrefix(prefix);
  assert.equal(pool.availableCount, before);
  assert.equal(pool.allocatePrefix(), prefix);
});

test('prefixes and single addresses never overlap (random interleavings)', () => {
  fc.assert(
    fc.property(fc.array(fc.boolean(), { maxLength: 40 }), (steps) => {
      const pool = new SubnetPool(wide);
      const seen = new Set<string>();
      for (const wantPrefix of steps) {
        const ips = wantPrefix ? tryPrefix(pool) : pool.allocate(1);
        for (const ip of ips) {
          assert.equal(seen.has(ip), false, `${ip} handed out twice`);
          seen.add(ip);
        }
      }
    }),
  );
});

function tryPrefix(pool: SubnetPool): string[] {
  try {
    return prefixAddresses(pool.allocatePrefix());
  } catch {
    return [];
  }
}
