import assert from 'node:assert/strict';
import { isIPv4 } from 'node:net';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  AWS_RESERVED_PER_SUBNET,
  cidrContains,
  cidrsOverlap,
  cidrWithin,
  formatCidr,
  formatIpv4,
  isAwsReserved,
  isCidr,
  isIpv4,
  parseCidr,
  parseIpv4,
  routerAddress,
  subnetGateway,
} from './ipv4.ts';

test('an address parses to its 32-bit number and formats back', () => {
  assert.equal(parseIpv4('10.0.1.7'), 0x0a000107);
  assert.equal(parseIpv4('255.255.255.255'), 2 ** 32 - 1);
  assert.equal(formatIpv4(0xc0a80781), '192.168.7.129');
  fc.assert(fc.property(fc.integer({ min: 0, max: 2 ** 32 - 1 }), (n) => parseIpv4(formatIpv4(n)) === n));
});

test('malformed addresses are refused with the text quoted', () => {
  for (const bad of [
    '',
    '10.0.0',
    '10.0.0.0.1',
    '10.0.0.256',
    '10.0.0.-1',
    '10.0.0.01',
    ' 10.0.0.1',
    '1e1.0.0.1',
    '0x1.0.0.1',
  ]) {
    assert.equal(isIpv4(bad), false, bad);
    assert.throws(() => parseIpv4(bad), { message: `not an IPv4 address: ${JSON.stringify(bad)}` });
  }
});

test('isIpv4 agrees with node:net on dotted-decimal text', () => {
  const octet = fc.oneof(
    fc.integer({ min: 0, max: 300 }).map(String),
    fc.constantFrom('00', '01', '007', '', 'a'),
  );
  const text = fc.array(octet, { minLength: 3, maxLength: 5 }).map((parts) => parts.join('.'));
  fc.assert(fc.property(text, (t) => isIpv4(t) === isIPv4(t)));
});

test('a CIDR parses to its block, clearing host bits, and formats back', () => {
  assert.deepEqual(parseCidr('10.0.32.0/19'), { network: 0x0a002000, prefixLength: 19, size: 8192 });
  assert.equal(formatCidr(parseCidr('192.168.7.130/26')), '192.168.7.128/26');
  assert.equal(formatCidr(parseCidr('0.0.0.0/0')), '0.0.0.0/0');
  assert.equal(parseCidr('10.0.0.9/32').size, 1);
});

test('malformed CIDRs are refused: no prefix, an empty or out-of-range one, stray text', () => {
  for (const bad of [
    '10.0.0.0',
    '10.0.0.0/',
    '10.0.0.0/33',
    '10.0.0.0/ 8',
    '10.0.0.0/08',
    '10.0.0.0/8/9',
    '10.0.0/8',
    '/8',
  ]) {
    assert.equal(isCidr(bad), false, bad);
    assert.throws(() => parseCidr(bad), { message: `not an IPv4 CIDR: ${JSON.stringify(bad)}` });
  }
});

test('containment, nesting and overlap of blocks', () => {
  const vpc = parseCidr('10.0.0.0/16');
  const subnet = parseCidr('10.0.32.0/20');
  assert.ok(cidrContains(subnet, parseIpv4('10.0.47.255')));
  assert.ok(!cidrContains(subnet, parseIpv4('10.0.48.0')));
  assert.ok(cidrWithin(subnet, vpc));
  assert.ok(!cidrWithin(vpc, subnet));
  assert.ok(!cidrWithin(parseCidr('10.0.255.0/23'), parseCidr('10.0.0.0/17')));
  assert.ok(cidrsOverlap(vpc, subnet) && cidrsOverlap(subnet, vpc));
  assert.ok(!cidrsOverlap(subnet, parseCidr('10.0.48.0/20')));
});

test("a subnet's router is its first address + 1", () => {
  assert.equal(formatIpv4(routerAddress(parseCidr('10.0.32.0/19'))), '10.0.32.1');
  assert.equal(subnetGateway('10.0.32.0/19'), '10.0.32.1');
  assert.equal(subnetGateway('192.168.7.130/26'), '192.168.7.129');
});

test('subnetGateway refuses text that is no subnet, and blocks too small for a router', () => {
  assert.throws(() => subnetGateway('10.0.0.0'), /invalid subnet CIDR "10\.0\.0\.0"/);
  assert.throws(() => subnetGateway('10.0.0.0/31'), /invalid subnet CIDR "10\.0\.0\.0\/31"/);
  assert.equal(subnetGateway('10.0.0.4/30'), '10.0.0.5');
});

test('AWS reserves the first four and the last address of a subnet, and nothing else', () => {
  const subnet = parseCidr('10.0.0.0/28');
  const reserved = [...Array(subnet.size).keys()].filter((i) => isAwsReserved(subnet, subnet.network + i));
  assert.deepEqual(reserved, [0, 1, 2, 3, 15]);
  assert.equal(reserved.length, AWS_RESERVED_PER_SUBNET);
});
