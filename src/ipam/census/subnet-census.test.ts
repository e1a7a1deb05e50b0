import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CloudError } from '../../cloud/cloud.ts';
import { FakeCloud } from '../testing/fake-cloud.ts';
import { takeCensus } from './census-reading.ts';
import { CensusView, censusOf } from './subnet-census.ts';

const base = { subnetId: 'subnet-1', cidr: '10.0.0.0/24', takenAt: 0 };

test('a /24 nothing holds has 14 free /28s: the first and last hold AWS addresses', () => {
  const view = new CensusView(censusOf({ ...base, addresses: [], prefixes: [], reservations: [] }));
  assert.deepEqual(view.figures(), { freePrefixes: 14, freeAddresses: 251 });
  assert.equal(view.freePrefixBlocks()[0], '10.0.0.16/28');
});

test('one address breaks its /28; a prefix takes its 16; an explicit reservation removes what it covers', () => {
  const view = new CensusView(
    censusOf({
      ...base,
      addresses: ['10.0.0.40'],
      prefixes: ['10.0.0.64/28'],
      reservations: [
        { cidr: '10.0.0.128/26', type: 'explicit' },
        { cidr: '10.0.0.192/28', type: 'prefix' },
      ],
    }),
  );
  const free = view.freePrefixBlocks();
  assert.equal(free.includes('10.0.0.32/28'), false);
  assert.equal(free.includes('10.0.0.64/28'), false);
  assert.equal(free.includes('10.0.0.128/28'), false);
  assert.equal(free.includes('10.0.0.192/28'), true, 'a prefix reservation is where prefixes go');
  assert.deepEqual(view.figures(), { freePrefixes: 14 - 1 - 1 - 4, freeAddresses: 251 - 1 - 16 - 64 });
});

test('named /32s: broken blocks first, then whole ones block by block, in the order the node ranks them; never reserved', () => {
  const view = new CensusView(
    censusOf({
      ...base,
      // .16/28 has 15 held; .32/28 has 2 held; .48/28 is whole.
      addresses: [...Array.from({ length: 15 }, (_, i) => `10.0.0.${16 + i}`), '10.0.0.33', '10.0.0.34'],
      prefixes: [],
      reservations: [{ cidr: '10.0.0.96/27', type: 'prefix' }],
    }),
  );
  const byAddress = view.namedAddressOrder(
    () => false,
    (block) => block,
  );
  // Broken: .0/28 (AWS keeps .0-.3), .16/28, .32/28, .240/28 (the broadcast), in address order.
  assert.deepEqual(
    byAddress.slice(0, 12),
    Array.from({ length: 12 }, (_, i) => `10.0.0.${4 + i}`),
  );
  assert.deepEqual(byAddress.slice(12, 14), ['10.0.0.31', '10.0.0.32']);
  assert.deepEqual(
    byAddress.slice(14, 27),
    Array.from({ length: 13 }, (_, i) => `10.0.0.${35 + i}`),
  );
  assert.deepEqual(
    byAddress.slice(27, 42),
    Array.from({ length: 15 }, (_, i) => `10.0.0.${240 + i}`),
  );
  // Then whole blocks, one after the other; never the prefix reservation's .96/27.
  assert.deepEqual(
    byAddress.slice(42, 58),
    Array.from({ length: 16 }, (_, i) => `10.0.0.${48 + i}`),
  );
  assert.ok(!byAddress.some((ip) => Number(ip.split('.')[3]) >= 96 && Number(ip.split('.')[3]) < 128));
  // Another node ranks the blocks otherwise: the broken ones still come before any whole one.
  const reversed = view.namedAddressOrder(
    () => false,
    (block) => -block,
  );
  assert.deepEqual(
    reversed.slice(0, 15),
    Array.from({ length: 15 }, (_, i) => `10.0.0.${240 + i}`),
  );
  assert.equal(reversed[42], '10.0.0.224', 'the highest whole block first');
  const skipped = view.namedAddressOrder(
    (ip) => ip === '10.0.0.31',
    (block) => block,
  );
  assert.equal(skipped.includes('10.0.0.31'), false);
});

test('without the reservations the census counts but names no /32', async () => {
  const cloud = new FakeCloud();
  cloud.failNext(
    'subnetCidrReservations',
    new CloudError(
      'You are not authorized to perform: ec2:GetSubnetCidrReservations',
      'UnauthorizedOperation',
      false,
    ),
  );
  const warned: string[] = [];
  const log = { info() {}, error() {}, warn: (msg: string) => warned.push(msg) };
  const census = await takeCensus(cloud, { subnetId: 'subnet-1', cidr: '10.0.0.0/24' }, 5, log);
  assert.equal(census.reservationsKnown, false);
  assert.match(warned[0] ?? '', /ec2:GetSubnetCidrReservations/);
  const view = new CensusView(census);
  assert.equal(view.figures().freePrefixes > 0, true);
  assert.deepEqual(
    view.namedAddressOrder(
      () => false,
      (b) => b,
    ),
    [],
  );
  cloud.failNext('subnetCidrReservations', new CloudError('throttled', 'RequestLimitExceeded', true));
  await assert.rejects(takeCensus(cloud, { subnetId: 'subnet-1', cidr: '10.0.0.0/24' }, 5, log), {
    code: 'RequestLimitExceeded',
  });
});
