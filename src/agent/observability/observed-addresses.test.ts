import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AddressSource } from '../address-source.ts';
import { observedAddresses } from './observed-addresses.ts';

test('the observed address source counts allocations that found no address, times waits for the pool to grow, and leaves allocation untouched', async () => {
  const waits: [number, boolean][] = [];
  let noneFree = 0;
  let wake = true;
  const inner: AddressSource = {
    allocate: (owner) => (owner === 'a' ? { ip: '10.0.0.5', eniId: 'eni-1', routeTable: 254 } : undefined),
    waitForAddress: async () => {
      if (!wake) throw new Error('no free address after 10 ms');
    },
    release: () => {},
    unreserve: () => {},
    lostEni: (eniId) => (eniId === 'eni-2' ? { since: 1 } : undefined),
  };
  const source = observedAddresses(inner, {
    noneFree: () => noneFree++,
    waited: (ms, woken) => waits.push([ms, woken]),
  });
  assert.deepEqual(source.allocate('a'), { ip: '10.0.0.5', eniId: 'eni-1', routeTable: 254 });
  assert.equal(waits.length, 0, 'an allocation is no wait');
  assert.equal(noneFree, 0, 'an address was free');
  assert.equal(source.allocate('b'), undefined);
  assert.equal(noneFree, 1, 'none free for b');
  await source.waitForAddress(10);
  wake = false;
  await assert.rejects(source.waitForAddress(10), /no free address/);
  assert.deepEqual(
    waits.map(([, woken]) => woken),
    [true, false],
  );
  assert.equal(noneFree, 1, 'a wait is not an allocation');
  assert.deepEqual(source.lostEni?.('eni-2'), { since: 1 });
});
