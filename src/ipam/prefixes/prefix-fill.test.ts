// Which address a new pod gets when ENIs hold prefixes: partly used prefixes fill before new ones,
// and addresses of the other mode are a second choice (prefix-pool.ts secondChoice).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AddressPool } from '../pool/pool.ts';
import { PrefixBook, prefixAddresses } from './prefixes.ts';

const ENI = {
  eniId: 'eni-0',
  mac: '02:00:00:00:00:01',
  deviceNumber: 0,
  subnetId: 'subnet-1',
  primaryIp: '10.0.0.4',
  subnetCidr: '10.0.0.0/16',
};

function poolWith(prefixes: readonly string[], singles: readonly string[]) {
  const pool = new AddressPool({ cooldownMs: 30_000 });
  pool.addEni(ENI);
  pool.addAddresses('eni-0', [...singles, ...prefixes.flatMap(prefixAddresses)]);
  const book = new PrefixBook();
  book.add('eni-0', prefixes);
  return { pool, book };
}

test('pods fill a partly used prefix before they touch the next one', () => {
  const { pool } = poolWith(['10.0.1.0/28', '10.0.1.16/28'], []);
  const ips = Array.from({ length: 16 }, (_, i) => pool.allocate(`p${i}`, 0)?.ip);
  assert.deepEqual(ips, prefixAddresses('10.0.1.0/28'));
  // A freed address of the full prefix, once its cooldown ended (a pass expires it), is taken
  // before the wholly free second prefix, which stays free to be given back.
  pool.release('10.0.1.3', 0);
  pool.expireCooling(30_001);
  assert.equal(pool.allocate('late', 30_001)?.ip, '10.0.1.3');
  assert.equal(pool.allocate('next', 30_001)?.ip, '10.0.1.16');
});

test('in prefix mode secondary IPs are a second choice; with prefix delegation off, prefix addresses are', () => {
  const { pool, book } = poolWith(['10.0.1.0/28'], ['10.0.0.9']);
  const inPrefix = (eniId: string, ip: string) => book.prefixOf(eniId, ip) !== undefined;
  assert.equal(pool.allocate('a', 0, (e, ip) => !inPrefix(e, ip))?.ip, '10.0.1.0');
  assert.equal(pool.allocate('b', 0, inPrefix)?.ip, '10.0.0.9');
  // Only second choices left: taken all the same, a pod never waits for a mode.
  assert.equal(pool.allocate('c', 0, inPrefix)?.ip, '10.0.1.1');
});
