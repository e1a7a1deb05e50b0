import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CniError } from './errors.ts';
import { type CniResult, chainResult, formatResult, versionResult } from './result.ts';

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

test('chainResult without a prevResult is the plugin own result', () => {
  assert.deepEqual(chainResult(undefined, result), result);
});

test("chainResult keeps the prevResult and appends the plugin's own, moving its interface indexes", () => {
  const prev: CniResult = {
    interfaces: [{ name: 'cni0' }, { name: 'net9', sandbox: '/var/run/netns/p1' }],
    ips: [{ address: '192.0.2.7/24', interface: 1 }],
    routes: [{ dst: '198.51.100.0/24', gw: '192.0.2.1' }],
    dns: { nameservers: ['192.0.2.53'], domain: 'prev.example' },
  };
  const own: CniResult = {
    interfaces: [{ name: 'vpc1' }, { name: 'eth0', sandbox: '/var/run/netns/p1' }],
    ips: [{ address: '10.0.1.23/32', gateway: '169.254.1.1', interface: 1 }],
    routes: [{ dst: '0.0.0.0/0', gw: '169.254.1.1' }],
    dns: { domain: 'own.example' },
  };
  const out = chainResult(prev, own);
  assert.deepEqual(
    out.interfaces?.map((i) => i.name),
    ['cni0', 'net9', 'vpc1', 'eth0'],
  );
  assert.deepEqual(out.ips, [
    { address: '192.0.2.7/24', interface: 1 },
    { address: '10.0.1.23/32', gateway: '169.254.1.1', interface: 3 },
  ]);
  assert.deepEqual(
    out.routes?.map((r) => r.dst),
    ['198.51.100.0/24', '0.0.0.0/0'],
  );
  assert.deepEqual(out.dns, { nameservers: ['192.0.2.53'], domain: 'own.example' });
});

test('chainResult leaves out a section that neither result has', () => {
  const out = chainResult({ ips: [{ address: '192.0.2.7/24' }] }, { ips: [{ address: '10.0.1.23/32' }] });
  assert.deepEqual(out, { ips: [{ address: '192.0.2.7/24' }, { address: '10.0.1.23/32' }] });
});
