import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { eniSpec } from '../testing/eni-spec.ts';
import { AddressPool, routeTableFor } from './pool.ts';

const COOLDOWN = 30_000;

/** Primary ENI with .11-.13, eni-b (device 1) with .21-.23; added in reverse device order on purpose. */
function twoEniPool(): AddressPool {
  const pool = new AddressPool({ cooldownMs: COOLDOWN });
  pool.addEni(eniSpec('eni-b', 1));
  pool.addAddresses('eni-b', ['10.0.1.21', '10.0.1.22', '10.0.1.23']);
  pool.addEni(eniSpec('eni-a', 0));
  pool.addAddresses('eni-a', ['10.0.0.11', '10.0.0.12', '10.0.0.13']);
  return pool;
}

describe('AddressPool', () => {
  test('route tables: main for the primary ENI, device number + 1 otherwise', () => {
    assert.equal(routeTableFor(0), 254);
    assert.equal(routeTableFor(1), 2);
    assert.equal(routeTableFor(7), 8);
    const pool = twoEniPool();
    assert.deepEqual(
      pool.enis().map((e) => [e.eniId, e.routeTable, e.gateway]),
      [
        ['eni-a', 254, '10.0.0.1'],
        ['eni-b', 2, '10.0.0.1'],
      ],
    );
  });

  test("an ENI's gateway is the first host of its subnet, and an ENI without a valid subnet is refused", () => {
    const pool = new AddressPool({ cooldownMs: COOLDOWN });
    assert.equal(pool.addEni({ ...eniSpec('eni-a', 0), subnetCidr: '10.0.32.0/19' }).gateway, '10.0.32.1');
    assert.equal(
      pool.addEni({ ...eniSpec('eni-b', 1), subnetCidr: '192.168.7.130/26' }).gateway,
      '192.168.7.129',
    );
    assert.throws(
      () => pool.addEni({ ...eniSpec('eni-c', 2), subnetCidr: '10.0.0.0' }),
      /invalid subnet CIDR/,
    );
    assert.deepEqual(
      pool.enis().map((e) => e.eniId),
      ['eni-a', 'eni-b'],
    );
  });

  test('pods fill ENIs in device order', () => {
    const pool = twoEniPool();
    const got = ['a', 'b', 'c', 'd'].map((o) => pool.allocate(o, 0)?.ip);
    assert.deepEqual(got, ['10.0.0.11', '10.0.0.12', '10.0.0.13', '10.0.1.21']);
    assert.equal(pool.allocate('d', 0)?.eni.eniId, 'eni-b', 'the owner keeps its address on a retried ADD');
  });

  test('an empty pool allocates nothing', () => {
    const pool = new AddressPool({ cooldownMs: COOLDOWN });
    pool.addEni(eniSpec('eni-a', 0));
    assert.equal(pool.allocate('a', 0), undefined);
  });

  test('a released address is not handed out before its cooldown ends', () => {
    const pool = new AddressPool({ cooldownMs: COOLDOWN });
    pool.addEni(eniSpec('eni-a', 0));
    pool.addAddresses('eni-a', ['10.0.0.11']);
    assert.equal(pool.allocate('a', 0)?.ip, '10.0.0.11');
    assert.deepEqual(pool.release('10.0.0.11', 1000), { owner: 'a', eni: pool.eni('eni-a') });
    assert.equal(pool.allocate('b', 1000 + COOLDOWN - 1), undefined);
    assert.deepEqual(pool.stats(1000 + COOLDOWN - 1), {
      total: 1,
      assigned: 0,
      cooling: 1,
      available: 0,
      enis: 1,
    });
    assert.equal(pool.allocate('b', 1000 + COOLDOWN)?.ip, '10.0.0.11');
  });

  test('a never-used address is preferred over one whose cooldown ended', () => {
    const pool = new AddressPool({ cooldownMs: COOLDOWN });
    pool.addEni(eniSpec('eni-a', 0));
    pool.addAddresses('eni-a', ['10.0.0.11']);
    pool.allocate('a', 0);
    pool.release('10.0.0.11', 0);
    pool.addAddresses('eni-a', ['10.0.0.12']);
    assert.equal(pool.allocate('b', COOLDOWN * 2)?.ip, '10.0.0.12');
  });

  test('release with an owner frees only that owner’s address', () => {
    const pool = twoEniPool();
    const ip = pool.allocate('new-sandbox', 0)?.ip ?? '';
    assert.equal(pool.release(ip, 5, 'old-sandbox'), undefined);
    assert.deepEqual(pool.state(ip), { kind: 'assigned', owner: 'new-sandbox' });
    assert.equal(pool.release(ip, 5)?.owner, 'new-sandbox');
    assert.equal(pool.release(ip, 6), undefined, 'releasing twice is a no-op');
    assert.deepEqual(pool.state(ip), { kind: 'cooling', freedAt: 5 });
  });

  test('unreserve frees at once, without cooldown', () => {
    const pool = twoEniPool();
    const ip = pool.allocate('a', 0)?.ip ?? '';
    assert.equal(pool.unreserve(ip, 'b'), false);
    assert.equal(pool.unreserve(ip), true);
    assert.equal(pool.allocate('b', 0)?.ip, ip);
  });

  test('restore rebuilds assignments and cooldowns from the ledger', () => {
    const pool = twoEniPool();
    assert.equal(pool.restoreAssigned('10.0.0.12', 'a'), true);
    assert.equal(pool.restoreAssigned('10.0.0.12', 'b'), false, 'held by another owner');
    assert.equal(pool.restoreAssigned('10.9.9.9', 'c'), false, 'not on this node');
    assert.equal(pool.restoreCooling('10.0.0.11', 100), true);
    assert.equal(pool.restoreCooling('10.0.0.12', 100), false, 'assigned addresses do not cool');
    assert.equal(pool.allocate('a', 0)?.ip, '10.0.0.12');
    assert.equal(pool.allocate('z', 200)?.ip, '10.0.0.13', 'the restored cooldown is honoured');
  });

  test('stats add up per ENI and in total', () => {
    const pool = twoEniPool();
    pool.allocate('a', 0);
    pool.allocate('b', 0);
    pool.release('10.0.0.11', 10);
    assert.deepEqual(pool.stats(20), { total: 6, assigned: 1, cooling: 1, available: 4, enis: 2 });
    assert.deepEqual(
      pool.eniStats(20).map((s) => [s.eniId, s.total, s.assigned, s.cooling, s.available]),
      [
        ['eni-a', 3, 1, 1, 1],
        ['eni-b', 3, 0, 0, 3],
      ],
    );
  });

  test('excessFree takes available addresses from the highest ENI, never assigned or cooling ones', () => {
    const pool = twoEniPool();
    for (const o of ['a', 'b', 'c', 'd']) pool.allocate(o, 0);
    pool.release('10.0.1.21', 0);
    assert.deepEqual(pool.excessFree(5, 10)?.ips, ['10.0.1.22', '10.0.1.23']);
    assert.equal(pool.excessFree(5, 10)?.eni.eniId, 'eni-b');
    assert.deepEqual(pool.excessFree(1, 10)?.ips, ['10.0.1.22']);
    assert.equal(pool.excessFree(0, 10), undefined);
  });

  test('an address cannot be on two ENIs, and assigned ones cannot be removed', () => {
    const pool = twoEniPool();
    assert.throws(() => pool.addAddresses('eni-a', ['10.0.1.21']), /already in the pool \(on eni-b\)/);
    const ip = pool.allocate('a', 0)?.ip ?? '';
    assert.throws(() => pool.removeAddresses('eni-a', [ip, '10.0.0.13']), /assigned to a/);
    assert.equal(pool.state('10.0.0.13')?.kind, 'free', 'a refused removal removes nothing');
    assert.throws(() => pool.removeEni('eni-a'), /addresses still assigned: 10\.0\.0\.11/);
    pool.removeEni('eni-b');
    assert.equal(pool.state('10.0.1.21'), undefined);
    pool.addAddresses('eni-a', ['10.0.1.21']);
  });

  test('two ENIs cannot share a device number', () => {
    const pool = twoEniPool();
    assert.throws(() => pool.addEni(eniSpec('eni-c', 1)), /device number 1 is already used by eni-b/);
  });

  test('expireCooling frees ended cooldowns and reports them', () => {
    const pool = twoEniPool();
    pool.allocate('a', 0);
    pool.allocate('b', 0);
    pool.release('10.0.0.11', 0);
    pool.release('10.0.0.12', 10_000);
    assert.equal(pool.nextCoolingExpiry(5_000), 25_000);
    assert.deepEqual(pool.expireCooling(COOLDOWN), ['10.0.0.11']);
    assert.deepEqual(pool.state('10.0.0.11'), { kind: 'free' });
    assert.deepEqual(pool.state('10.0.0.12'), { kind: 'cooling', freedAt: 10_000 });
  });
});
