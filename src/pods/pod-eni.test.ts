import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PodEniAnnotationError, parsePodEniAnnotation } from './pod-eni.ts';

const good = {
  eniId: 'eni-0a1b2c3d4e5f60718',
  ifAddress: '0A:58:0A:00:00:07',
  privateIp: '10.0.0.170',
  vlanId: 3,
  subnetCidr: '10.0.0.128/25',
};

test('a valid annotation gives the branch ENI, its MAC, address, VLAN and the subnet router', () => {
  assert.deepEqual(parsePodEniAnnotation(JSON.stringify([good])), {
    eniId: 'eni-0a1b2c3d4e5f60718',
    mac: '0a:58:0a:00:00:07',
    ip: '10.0.0.170',
    vlanId: 3,
    subnetCidr: '10.0.0.128/25',
    gateway: '10.0.0.129',
  });
});

test('the Go tag spelling vlanID is read as the upstream decoder reads it; IPv6 fields are allowed', () => {
  const { vlanId: _, ...rest } = good;
  const got = parsePodEniAnnotation(
    JSON.stringify([{ ...rest, vlanID: 9, ipv6Addr: 'fd00::1', subnetV6Cidr: 'fd00::/64' }]),
  );
  assert.equal(got.vlanId, 9);
});

test('each field wrong in turn fails with that field named', () => {
  const cases: [string, Record<string, unknown>][] = [
    ['eniId', { eniId: 'i-123' }],
    ['eniId', { eniId: undefined }],
    ['ifAddress', { ifAddress: '0a:58:0a:00:00' }],
    ['ifAddress', { ifAddress: 7 }],
    ['privateIp', { privateIp: '10.0.0.999' }],
    ['privateIp', { privateIp: '10.0.1.5' }],
    ['privateIp', { privateIp: '10.0.0.128' }],
    ['privateIp', { privateIp: '10.0.0.255' }],
    ['vlanId', { vlanId: 0 }],
    ['vlanId', { vlanId: 4095 }],
    ['vlanId', { vlanId: '3' }],
    ['vlanId', { vlanId: 2.5 }],
    ['subnetCidr', { subnetCidr: '10.0.0.128' }],
    ['subnetCidr', { subnetCidr: '10.0.0.300/25' }],
    ['subnetCidr', { subnetCidr: '10.0.0.0/33' }],
    ['subnetCidr', { subnetCidr: '10.0.0.170/31' }],
  ];
  for (const [fieldName, change] of cases) {
    const bad = JSON.stringify([{ ...good, ...change }]);
    assert.throws(
      () => parsePodEniAnnotation(bad),
      (err: unknown) =>
        err instanceof PodEniAnnotationError && err.field === fieldName && err.message.includes(fieldName),
      `${fieldName}: ${JSON.stringify(change)}`,
    );
  }
  for (const value of ['not json', '[]', '{}', '[1]']) {
    assert.throws(() => parsePodEniAnnotation(value), PodEniAnnotationError, value);
  }
});
