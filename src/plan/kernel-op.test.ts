import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isAlreadyGone, opText, validateOp } from './kernel-op.ts';

test('"already gone" answers are told apart from real failures', () => {
  assert.ok(isAlreadyGone('RTNETLINK answers: No such process'));
  assert.ok(isAlreadyGone('Cannot find device "vpc1"'));
  assert.ok(isAlreadyGone('RTNETLINK answers: No such file or directory'));
  assert.ok(isAlreadyGone('Error: ipv4: Address not found.'));
  assert.equal(isAlreadyGone('RTNETLINK answers: Operation not supported'), false);
  assert.equal(isAlreadyGone('RTNETLINK answers: File exists'), false);
});

test('the text of an operation is the ip batch line that performs it', () => {
  assert.equal(
    opText({ op: 'routeAdd', dst: 'default', dev: 'eth0', via: '169.254.1.1', table: 254, replace: true }),
    'route replace default via 169.254.1.1 dev eth0 table main',
  );
  assert.equal(
    opText({ op: 'ruleAdd', rule: { priority: 10, iif: 'vlan1', table: 101 } }),
    'rule add iif vlan1 lookup 101 prio 10',
  );
  assert.equal(
    opText(
      { op: 'vethAdd', name: 'eth0', mtu: 1500, peer: 'vpc1', peerMac: '02:00:00:00:00:01' },
      '/proc/1/ns/net',
    ),
    'link add eth0 mtu 1500 type veth peer name vpc1 mtu 1500 address 02:00:00:00:00:01 netns /proc/1/ns/net',
  );
});

test('nothing that could read as a second command reaches a batch line', () => {
  assert.throws(() => validateOp({ op: 'linkDel', dev: 'a\nlink del eth0' }), /invalid link name/);
  assert.throws(
    () => validateOp({ op: 'addrAdd', dev: 'eth0', cidr: '10.0.0.5/32 ; x' }),
    /not an IPv4 CIDR/,
  );
  assert.throws(
    () => validateOp({ op: 'neighAdd', dev: 'eth0', ip: '169.254.1.1', lladdr: 'AA:BB:CC:DD:EE:FF nud' }),
    /invalid MAC/,
  );
  assert.throws(() => validateOp({ op: 'ruleAdd', rule: { priority: -1, table: 2 } }), /priority/);
  validateOp({ op: 'routeAdd', dst: 'default', dev: 'eth0', via: '10.0.0.1', table: 2 });
});

test('IPv6 is accepted for addresses, routes and neighbours, and refused for rules, SNAT and mixed families', () => {
  validateOp({ op: 'addrAdd', dev: 'eth0', cidr: '2001:db8::5/128', nodad: true });
  validateOp({ op: 'routeAdd', dst: 'default', dev: 'eth0', via: 'fe80::1', table: 254, metric: 1024 });
  validateOp({ op: 'routeAdd', dst: '2001:db8::5/128', dev: 'vpc1', table: 254 });
  validateOp({ op: 'routeDel', dst: '2001:db8::5/128', dev: 'vpc1', table: 254 });
  validateOp({ op: 'neighAdd', dev: 'eth0', ip: 'fe80::1', lladdr: '02:00:00:00:00:01' });
  assert.throws(
    () => validateOp({ op: 'addrAdd', dev: 'eth0', cidr: '2001:db8::5/129' }),
    /not an IPv6 CIDR/,
  );
  assert.throws(() => validateOp({ op: 'addrAdd', dev: 'eth0', cidr: '2001:db8::5' }), /not an IPv6 CIDR/);
  assert.throws(
    () => validateOp({ op: 'addrAdd', dev: 'eth0', cidr: '10.0.0.5/32', nodad: true }),
    /nodad is for IPv6 addresses only/,
  );
  assert.throws(
    () => validateOp({ op: 'routeAdd', dst: '2001:db8::/64', dev: 'eth0', via: '10.0.0.1', table: 254 }),
    /another address family/,
  );
  assert.throws(
    () => validateOp({ op: 'ruleAdd', rule: { priority: 512, to: '2001:db8::5/128', table: 254 } }),
    /not an IPv4 CIDR/,
  );
  assert.throws(() => validateOp({ op: 'snatAdd', ip: '2001:db8::5' }), /not an IPv4 address/);
  assert.equal(
    opText({ op: 'addrAdd', dev: 'eth0', cidr: '2001:db8::5/128', nodad: true }),
    'addr add 2001:db8::5/128 dev eth0 nodad',
  );
});
