import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hostVethMac, hostVethName, MAX_LINK_NAME } from './names.ts';

const key = { network: 'vpcnet', containerId: 'a279f00dcafe', ifName: 'eth0' };

test('two sandboxes of one pod (different container IDs) get different host veth names and MACs', () => {
  const other = { ...key, containerId: '30c8beefbabe' };
  assert.notEqual(hostVethName(key), hostVethName(other));
  assert.notEqual(hostVethMac(key), hostVethMac(other));
});

test('the host veth name is stable for one key and depends on network and ifName too', () => {
  assert.equal(hostVethName(key), hostVethName({ ...key }));
  assert.notEqual(hostVethName(key), hostVethName({ ...key, ifName: 'eth1' }));
  assert.notEqual(hostVethName(key), hostVethName({ ...key, network: 'other' }));
});

test('host veth names fit in IFNAMSIZ and keep the prefix, clamping a long one', () => {
  for (const prefix of ['', 'vpc', 'eni', 'averyveryverylongprefix']) {
    const name = hostVethName(key, prefix);
    assert.ok(name.length <= MAX_LINK_NAME, `${name} is longer than ${MAX_LINK_NAME}`);
    assert.ok(name.startsWith(prefix.slice(0, 7)), name);
    assert.match(name.slice(Math.min(prefix.length, 7)), /^[0-9a-f]{8,}$/);
  }
  assert.match(hostVethName(key), /^vpc[0-9a-f]{12}$/);
});

test('a prefix that is not a valid link name part is rejected', () => {
  assert.throws(() => hostVethName(key, 'a/b'), /invalid veth prefix/);
  assert.throws(() => hostVethName(key, 'a b'), /invalid veth prefix/);
});

test('host veth MAC is a locally administered unicast address', () => {
  for (const containerId of ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']) {
    const mac = hostVethMac({ ...key, containerId });
    assert.match(mac, /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/);
    const first = Number.parseInt(mac.slice(0, 2), 16);
    assert.equal(first & 0x01, 0, `${mac} is multicast`);
    assert.equal(first & 0x02, 0x02, `${mac} is not locally administered`);
  }
  assert.equal(hostVethMac(key), hostVethMac({ ...key }));
});
