// Held-back addresses (IMDS-only mode): in the pool, so a pod found on the node can hold one and
// nothing else can take it, but never lent, freed to EC2 or counted available before confirm().
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AddressPool } from './pool.ts';

function pool(): AddressPool {
  const p = new AddressPool({ cooldownMs: 1000 });
  p.addEni({
    eniId: 'eni-a',
    mac: '02:00:00:00:00:01',
    deviceNumber: 0,
    subnetId: 'subnet-1',
    primaryIp: '10.0.0.4',
    subnetCidr: '10.0.0.0/24',
  });
  p.addAddresses('eni-a', ['10.0.0.11', '10.0.0.12'], { unconfirmed: true });
  return p;
}

test('an unconfirmed address is never lent nor given back, and counts apart from the available ones', () => {
  const p = pool();
  assert.equal(p.allocate('pod-a', 0), undefined);
  assert.equal(p.excessFree(5, 0), undefined);
  assert.deepEqual(p.stats(0), { total: 2, assigned: 0, cooling: 0, available: 0, unconfirmed: 2, enis: 1 });
  assert.equal(p.unconfirmed('10.0.0.11'), true);
});

test('confirmed addresses are lent; confirm() names only those that were held back', () => {
  const p = pool();
  assert.deepEqual(p.confirm(['10.0.0.12', '10.0.0.99']), ['10.0.0.12']);
  assert.equal(p.allocate('pod-a', 0)?.ip, '10.0.0.12');
  assert.deepEqual(p.stats(0), { total: 2, assigned: 1, cooling: 0, available: 0, unconfirmed: 1, enis: 1 });
  assert.deepEqual(p.confirm(['10.0.0.12']), []);
});

test('a pod found on the node holds its unconfirmed address; once released it is still not lent before confirm()', () => {
  const p = pool();
  assert.equal(p.restoreAssigned('10.0.0.11', 'recovered/vpc1/-'), true);
  assert.equal(p.allocate('pod-b', 0), undefined);
  p.release('10.0.0.11', 0);
  assert.equal(p.allocate('pod-b', 5000), undefined, 'cooled, but still unconfirmed');
  p.confirm(['10.0.0.11', '10.0.0.12']);
  assert.notEqual(p.allocate('pod-b', 5000), undefined);
});

test('an address that leaves the pool unconfirmed is forgotten as such', () => {
  const p = pool();
  p.removeAddresses('eni-a', ['10.0.0.11']);
  assert.equal(p.unconfirmed('10.0.0.11'), false);
  p.addAddresses('eni-a', ['10.0.0.11']);
  assert.equal(p.allocate('pod-a', 0)?.ip, '10.0.0.11', 'joined again confirmed');
});
