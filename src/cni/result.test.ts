import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CniError } from './errors.ts';
import { type CniResult, formatResult, versionResult } from './result.ts';

const result: CniResult = {
  interfaces: [{ name: 'eth0', mac: '0a:58:0a:00:01:17', sandbox: '/var/run/netns/p1', mtu: 9001 }],
  ips: [
    { address: '10.0.1.23/32', gateway: '169.254.1.1', interface: 0 },
    { address: 'fd00::17/128', interface: 0 },
  ],
  routes: [{ dst: '0.0.0.0/0', gw: '169.254.1.1', mtu: 9001, table: 2 }],
  dns: { nameservers: ['10.0.0.2'] },
};

test('1.0.0 results carry no "version" on ips', () => {
  const out = formatResult(result, '1.0.0');
  assert.equal(out.cniVersion, '1.0.0');
  assert.deepEqual(out.ips, result.ips);
  assert.ok(out.ips?.every((ip) => !('version' in ip)));
});

test('0.3.x and 0.4.0 results tag each ip with its family', () => {
  for (const v of ['0.3.0', '0.3.1', '0.4.0']) {
    const out = formatResult(result, v);
    assert.equal(out.cniVersion, v);
    assert.deepEqual(
      out.ips?.map((ip) => ip.version),
      ['4', '6'],
      v,
    );
    assert.equal(out.ips?.[0]?.address, '10.0.1.23/32');
    assert.equal(out.ips?.[0]?.interface, 0);
  }
});

test('1.1.0 results keep interface mtu and route mtu/table', () => {
  const out = formatResult(result, '1.1.0');
  assert.equal(out.interfaces?.[0]?.mtu, 9001);
  assert.deepEqual(out.routes, [{ dst: '0.0.0.0/0', gw: '169.254.1.1', mtu: 9001, table: 2 }]);
});

test('results for versions before 1.1.0 drop the fields 1.1.0 introduced', () => {
  for (const v of ['0.4.0', '1.0.0']) {
    const out = formatResult(result, v);
    assert.deepEqual(
      out.interfaces,
      [{ name: 'eth0', mac: '0a:58:0a:00:01:17', sandbox: '/var/run/netns/p1' }],
      v,
    );
    assert.deepEqual(out.routes, [{ dst: '0.0.0.0/0', gw: '169.254.1.1' }], v);
  }
});

test('absent result sections stay absent and dns passes through', () => {
  const out = formatResult({ dns: { search: ['svc.cluster.local'] } }, '1.0.0');
  assert.deepEqual(out, { cniVersion: '1.0.0', dns: { search: ['svc.cluster.local'] } });
});

test('formatting for an unsupported version fails with code 1', () => {
  assert.throws(
    () => formatResult(result, '0.2.0'),
    (e) => e instanceof CniError && e.code === 1,
  );
});

test('VERSION answer echoes a supported requested version and lists all supported versions', () => {
  assert.deepEqual(versionResult('0.4.0'), {
    cniVersion: '0.4.0',
    supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'],
  });
});

test('VERSION answer falls back to 1.0.0 for a missing or unknown requested version', () => {
  assert.equal(versionResult(undefined).cniVersion, '1.0.0');
  assert.equal(versionResult('9.9.9').cniVersion, '1.0.0');
});
