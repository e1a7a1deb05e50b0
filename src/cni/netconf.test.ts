import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CniError } from './errors.ts';
import { parseNetConf } from './netconf.ts';

const base = { cniVersion: '1.0.0', name: 'vpcnet', type: 'vpcnet' };

function conf(extra: Record<string, unknown>): string {
  return JSON.stringify({ ...base, ...extra });
}

function throwsCode(fn: () => unknown, code: number, what: string): void {
  assert.throws(fn, (e) => e instanceof CniError && e.code === code, what);
}

test('all vpcnet keys are parsed into the typed NetConf and the raw object is kept', () => {
  const c = parseNetConf(
    conf({
      mtu: 9001,
      agentSocket: '/run/vpcnet/agent.sock',
      vethPrefix: 'vpc',
      podSGEnforcingMode: 'standard',
      delSpoolDir: '/var/lib/vpcnet/del-spool',
      runtimeConfig: { portMappings: [] },
      custom: 1,
    }),
  );
  assert.equal(c.cniVersion, '1.0.0');
  assert.equal(c.name, 'vpcnet');
  assert.equal(c.type, 'vpcnet');
  assert.equal(c.mtu, 9001);
  assert.equal(c.agentSocket, '/run/vpcnet/agent.sock');
  assert.equal(c.vethPrefix, 'vpc');
  assert.equal(c.podSGEnforcingMode, 'standard');
  assert.equal(c.delSpoolDir, '/var/lib/vpcnet/del-spool');
  assert.deepEqual(c.runtimeConfig, { portMappings: [] });
  assert.equal(c.raw.custom, 1);
});

test('optional keys that are absent stay absent', () => {
  const c = parseNetConf(conf({}));
  assert.deepEqual(Object.keys(c).sort(), ['cniVersion', 'name', 'raw', 'type']);
});

test('prevResult is parsed into the Result type', () => {
  const c = parseNetConf(
    conf({ prevResult: { cniVersion: '0.4.0', ips: [{ version: '4', address: '10.0.0.9/32' }] } }),
  );
  assert.deepEqual(c.prevResult, { ips: [{ address: '10.0.0.9/32' }] });
});

test('stdin that is not a JSON object fails with code 6', () => {
  throwsCode(() => parseNetConf('{"cniVersion":'), 6, 'truncated');
  throwsCode(() => parseNetConf(''), 6, 'empty');
  throwsCode(() => parseNetConf('[1]'), 6, 'array');
});

test('a missing or unsupported cniVersion fails with code 1', () => {
  throwsCode(() => parseNetConf(JSON.stringify({ name: 'n', type: 't' })), 1, 'missing');
  throwsCode(() => parseNetConf(conf({ cniVersion: '0.2.0' })), 1, '0.2.0');
  throwsCode(() => parseNetConf(conf({ cniVersion: '2.0.0' })), 1, '2.0.0');
});

test('name and type are required and the name must be a valid network name (code 7)', () => {
  throwsCode(() => parseNetConf(JSON.stringify({ cniVersion: '1.0.0', type: 't' })), 7, 'no name');
  throwsCode(() => parseNetConf(JSON.stringify({ cniVersion: '1.0.0', name: 'n' })), 7, 'no type');
  throwsCode(() => parseNetConf(conf({ name: '-bad' })), 7, 'leading dash');
  throwsCode(() => parseNetConf(conf({ name: 'a/b' })), 7, 'slash');
  throwsCode(() => parseNetConf(conf({ type: 3 })), 7, 'type not a string');
});

test('vpcnet keys with bad values fail with code 7', () => {
  throwsCode(() => parseNetConf(conf({ mtu: 9001.5 })), 7, 'fractional mtu');
  throwsCode(() => parseNetConf(conf({ mtu: 40 })), 7, 'tiny mtu');
  throwsCode(() => parseNetConf(conf({ podSGEnforcingMode: 'loose' })), 7, 'mode');
  throwsCode(() => parseNetConf(conf({ agentSocket: 'agent.sock' })), 7, 'relative socket');
  throwsCode(() => parseNetConf(conf({ delSpoolDir: 'spool' })), 7, 'relative spool dir');
  throwsCode(() => parseNetConf(conf({ vethPrefix: 'toolong' })), 7, 'long prefix');
  throwsCode(() => parseNetConf(conf({ vethPrefix: 'eth' })), 7, 'reserved prefix');
  throwsCode(() => parseNetConf(conf({ runtimeConfig: [] })), 7, 'runtimeConfig array');
});
