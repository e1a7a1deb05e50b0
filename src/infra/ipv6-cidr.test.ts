import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  canonicalIpv6,
  formatIpv6Cidr,
  ipv6CidrContains,
  isIpv6,
  isIpv6Cidr,
  parseIpv6,
  parseIpv6Cidr,
} from './ipv6-cidr.ts';

test('canonical IPv6 text is lower case, without leading zeros, with the longest zero run as ::', () => {
  assert.equal(canonicalIpv6('2001:0DB8:5E00:0001:0000:0000:0000:0001'), '2001:db8:5e00:1::1');
  assert.equal(canonicalIpv6('2001:db8:0:0:1:0:0:1'), '2001:db8::1:0:0:1');
  assert.equal(canonicalIpv6('2001:db8:0:1:1:1:1:1'), '2001:db8:0:1:1:1:1:1');
  assert.equal(canonicalIpv6('::'), '::');
  assert.equal(canonicalIpv6('fe80::'), 'fe80::');
  assert.equal(canonicalIpv6('::1'), '::1');
});

test('IPv6 parsing refuses IPv4, embedded IPv4 and zone indexes', () => {
  assert.equal(isIpv6('10.0.0.1'), false);
  assert.equal(isIpv6('::ffff:10.0.0.1'), false);
  assert.equal(isIpv6('fe80::1%eth0'), false);
  assert.throws(() => parseIpv6('2001:db8::g'), /not an IPv6 address/);
});

test('an IPv6 CIDR is normalised to its network and contains exactly its addresses', () => {
  assert.equal(isIpv6Cidr('2001:db8:5e00::/56'), true);
  assert.equal(isIpv6Cidr('2001:db8:5e00::/129'), false);
  assert.equal(isIpv6Cidr('10.0.0.0/16'), false);
  const c = parseIpv6Cidr('2001:db8:5e00:1:1:2::/80');
  assert.equal(formatIpv6Cidr(c), '2001:db8:5e00:1:1::/80');
  assert.equal(ipv6CidrContains(c, parseIpv6('2001:db8:5e00:1:1:ffff:ffff:ffff')), true);
  assert.equal(ipv6CidrContains(c, parseIpv6('2001:db8:5e00:1:2::')), false);
});
