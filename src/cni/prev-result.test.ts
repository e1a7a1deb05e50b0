import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CniError } from './errors.ts';
import { addressesOnInterface, parsePrevResult } from './prev-result.ts';

function code7(fn: () => unknown, what: string): void {
  assert.throws(fn, (e) => e instanceof CniError && e.code === 7, what);
}

test('a 1.0.0 prevResult parses into the Result type unchanged', () => {
  const raw = {
    cniVersion: '1.0.0',
    interfaces: [{ name: 'eth0', mac: '0a:58:0a:00:01:17', sandbox: '/var/run/netns/p1' }],
    ips: [{ address: '10.0.1.23/32', gateway: '169.254.1.1', interface: 0 }],
    routes: [{ dst: '0.0.0.0/0', gw: '169.254.1.1' }],
    dns: { nameservers: ['10.0.0.2'], domain: 'cluster.local', search: ['a'], options: ['ndots:5'] },
  };
  const { cniVersion: _v, ...expected } = raw;
  assert.deepEqual(parsePrevResult(raw), expected);
});

test('a 0.4.0 prevResult is accepted and its ips lose the "version" field', () => {
  const parsed = parsePrevResult({
    cniVersion: '0.4.0',
    interfaces: [{ name: 'eth0', sandbox: '/var/run/netns/p1' }],
    ips: [{ version: '4', address: '10.0.1.23/32', interface: 0 }],
  });
  assert.deepEqual(parsed.ips, [{ address: '10.0.1.23/32', interface: 0 }]);
});

test('a 0.2.0 prevResult (ip4/ip6) becomes ips and routes', () => {
  const parsed = parsePrevResult({
    cniVersion: '0.2.0',
    ip4: { ip: '10.0.1.23/24', gateway: '10.0.1.1', routes: [{ dst: '0.0.0.0/0' }] },
    ip6: { ip: 'fd00::17/64' },
  });
  assert.deepEqual(parsed, {
    ips: [{ address: '10.0.1.23/24', gateway: '10.0.1.1' }, { address: 'fd00::17/64' }],
    routes: [{ dst: '0.0.0.0/0' }],
  });
});

test('1.1.0 route fields are kept', () => {
  const parsed = parsePrevResult({ routes: [{ dst: '10.0.0.0/8', priority: 5, table: 101, scope: 0 }] });
  assert.deepEqual(parsed.routes, [{ dst: '10.0.0.0/8', priority: 5, table: 101, scope: 0 }]);
});

test('an empty sandbox string counts as a host interface', () => {
  const parsed = parsePrevResult({ interfaces: [{ name: 'vpc1a2b', sandbox: '' }] });
  assert.deepEqual(parsed.interfaces, [{ name: 'vpc1a2b' }]);
});

test('malformed prevResult fails with code 7 naming the bad field', () => {
  code7(() => parsePrevResult('nope'), 'not an object');
  code7(() => parsePrevResult({ ips: {} }), 'ips not an array');
  code7(() => parsePrevResult({ ips: [{ gateway: '1.1.1.1' }] }), 'ip without address');
  code7(() => parsePrevResult({ interfaces: [{ mac: 'x' }] }), 'interface without name');
  code7(() => parsePrevResult({ routes: [{ dst: '0.0.0.0/0', table: 'main' }] }), 'non-integer table');
  code7(() => parsePrevResult({ dns: { nameservers: [1] } }), 'non-string nameserver');
  assert.throws(
    () => parsePrevResult({ ips: [{ address: 5 }] }),
    (e) => e instanceof CniError && e.msg === 'prevResult.ips[0].address must be a string',
  );
});

test('an ip pointing at a missing interface index is rejected', () => {
  code7(
    () =>
      parsePrevResult({ interfaces: [{ name: 'eth0' }], ips: [{ address: '10.0.0.1/32', interface: 1 }] }),
    'index out of range',
  );
  code7(() => parsePrevResult({ ips: [{ address: '10.0.0.1/32', interface: -1 }] }), 'negative index');
});

test("addressesOnInterface returns only the IPs on the named sandbox interface, not a later plugin's", () => {
  const chained = parsePrevResult({
    cniVersion: '1.0.0',
    interfaces: [
      { name: 'vpc1' },
      { name: 'eth0', sandbox: '/var/run/netns/p1' },
      { name: 'net9', sandbox: '/var/run/netns/p1' },
    ],
    ips: [
      { address: '10.0.1.23/32', interface: 1 },
      { address: '192.0.2.9/24', interface: 2 },
      { address: '2001:db8::9/64', interface: 2 },
      { address: '198.51.100.1/32' },
      { address: '203.0.113.1/32', interface: 0 },
    ],
  });
  assert.deepEqual(addressesOnInterface(chained, 'eth0', '/var/run/netns/p1'), ['10.0.1.23']);
  assert.deepEqual(addressesOnInterface(chained, 'eth0'), ['10.0.1.23']);
  assert.deepEqual(addressesOnInterface(chained, 'eth0', '/var/run/netns/other'), []);
  assert.deepEqual(addressesOnInterface(chained, 'vpc1'), [], 'a host interface is no sandbox interface');
});
