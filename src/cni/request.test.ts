import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CniError } from './errors.ts';
import { parseCniRequest } from './request.ts';

const stdin = JSON.stringify({ cniVersion: '1.0.0', name: 'vpcnet', type: 'vpcnet' });
const addEnv = {
  CNI_COMMAND: 'ADD',
  CNI_CONTAINERID: '30c8f1e2',
  CNI_IFNAME: 'eth0',
  CNI_NETNS: '/var/run/netns/p1',
  CNI_PATH: '/opt/cni/bin:/usr/libexec/cni',
  CNI_ARGS: 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;K8S_POD_UID=u-1',
};

function throwsCode(fn: () => unknown, code: number, what: string): void {
  assert.throws(fn, (e) => e instanceof CniError && e.code === code, what);
}

test('ADD parses into a typed request with attachment key, netns, args and pod identity', () => {
  const r = parseCniRequest(addEnv, stdin);
  assert.equal(r.command, 'ADD');
  if (r.command !== 'ADD') return;
  assert.deepEqual(r.key, { network: 'vpcnet', containerId: '30c8f1e2', ifName: 'eth0' });
  assert.equal(r.netns, '/var/run/netns/p1');
  assert.deepEqual(r.cniPath, ['/opt/cni/bin', '/usr/libexec/cni']);
  assert.equal(r.args.get('K8S_POD_NAME'), 'web-0');
  assert.deepEqual(r.pod, { namespace: 'default', name: 'web-0', uid: 'u-1' });
  assert.equal(r.netConf.cniVersion, '1.0.0');
});

test('CHECK parses like ADD', () => {
  const r = parseCniRequest({ ...addEnv, CNI_COMMAND: 'CHECK' }, stdin);
  assert.equal(r.command, 'CHECK');
  assert.equal(r.command === 'CHECK' && r.netns, '/var/run/netns/p1');
});

test('a request without CNI_ARGS has no pod identity (cnitool)', () => {
  const { CNI_ARGS: _a, ...env } = addEnv;
  const r = parseCniRequest(env, stdin);
  assert.equal(r.command === 'ADD' && r.pod, undefined);
});

test('DEL accepts an empty or missing CNI_NETNS (containerd repeated DEL)', () => {
  for (const netns of ['', undefined]) {
    const r = parseCniRequest({ ...addEnv, CNI_COMMAND: 'DEL', CNI_NETNS: netns }, stdin);
    assert.equal(r.command, 'DEL');
    assert.equal(r.command === 'DEL' && 'netns' in r, false, String(netns));
  }
  const r = parseCniRequest({ ...addEnv, CNI_COMMAND: 'DEL' }, stdin);
  assert.equal(r.command === 'DEL' && r.netns, '/var/run/netns/p1');
});

test('ADD and CHECK without CNI_NETNS fail with code 4', () => {
  for (const cmd of ['ADD', 'CHECK']) {
    throwsCode(() => parseCniRequest({ ...addEnv, CNI_COMMAND: cmd, CNI_NETNS: '' }, stdin), 4, cmd);
    throwsCode(() => parseCniRequest({ ...addEnv, CNI_COMMAND: cmd, CNI_NETNS: undefined }, stdin), 4, cmd);
  }
});

test('a missing or unknown CNI_COMMAND fails with code 4', () => {
  throwsCode(() => parseCniRequest({ ...addEnv, CNI_COMMAND: undefined }, stdin), 4, 'missing');
  throwsCode(() => parseCniRequest({ ...addEnv, CNI_COMMAND: 'add' }, stdin), 4, 'lower case');
  throwsCode(() => parseCniRequest({ ...addEnv, CNI_COMMAND: 'UPDATE' }, stdin), 4, 'unknown');
});

test('a missing or malformed CNI_CONTAINERID fails with code 4', () => {
  for (const id of [undefined, '', '-abc', 'a b', 'a/b', '_x']) {
    throwsCode(() => parseCniRequest({ ...addEnv, CNI_CONTAINERID: id }, stdin), 4, String(id));
  }
  const r = parseCniRequest({ ...addEnv, CNI_CONTAINERID: 'Abc_1.2-3' }, stdin);
  assert.equal(r.command === 'ADD' && r.key.containerId, 'Abc_1.2-3');
});

test('a missing or invalid CNI_IFNAME fails with code 4', () => {
  for (const ifName of [undefined, '', '.', '..', 'a/b', 'eth:0', 'eth 0', 'eth\t0', 'a234567890123456']) {
    throwsCode(() => parseCniRequest({ ...addEnv, CNI_IFNAME: ifName }, stdin), 4, JSON.stringify(ifName));
  }
  const r = parseCniRequest({ ...addEnv, CNI_IFNAME: 'a23456789012345' }, stdin);
  assert.equal(r.command === 'ADD' && r.key.ifName, 'a23456789012345', '15 characters is allowed');
});

test('a malformed CNI_ARGS fails with code 4', () => {
  throwsCode(() => parseCniRequest({ ...addEnv, CNI_ARGS: 'K8S_POD_NAME' }, stdin), 4, 'no =');
});

test('the environment is checked before stdin', () => {
  throwsCode(() => parseCniRequest({ ...addEnv, CNI_IFNAME: undefined }, 'not json'), 4, 'env first');
});

test('stdin problems surface with their own codes (6 decode, 1 version, 7 config)', () => {
  throwsCode(() => parseCniRequest(addEnv, '{'), 6, 'decode');
  throwsCode(() => parseCniRequest(addEnv, '{"cniVersion":"0.2.0","name":"n","type":"t"}'), 1, 'version');
  throwsCode(() => parseCniRequest(addEnv, '{"cniVersion":"1.0.0","type":"t"}'), 7, 'name');
});

test('CHECK needs cniVersion 0.4.0 or later (code 1); 0.3.1 ADD is fine', () => {
  const old = JSON.stringify({ cniVersion: '0.3.1', name: 'n', type: 't' });
  throwsCode(() => parseCniRequest({ ...addEnv, CNI_COMMAND: 'CHECK' }, old), 1, 'check 0.3.1');
  assert.equal(parseCniRequest(addEnv, old).command, 'ADD');
});

test('VERSION needs no other env and reads the requested version leniently', () => {
  assert.deepEqual(parseCniRequest({ CNI_COMMAND: 'VERSION' }, '{"cniVersion":"0.4.0"}'), {
    command: 'VERSION',
    cniVersion: '0.4.0',
  });
  assert.deepEqual(parseCniRequest({ CNI_COMMAND: 'VERSION' }, ''), { command: 'VERSION' });
  assert.deepEqual(parseCniRequest({ CNI_COMMAND: 'VERSION' }, 'garbage'), { command: 'VERSION' });
});

const v11 = { cniVersion: '1.1.0', name: 'vpcnet', type: 'vpcnet' };

test('STATUS needs only the config, at version 1.1.0', () => {
  const r = parseCniRequest({ CNI_COMMAND: 'STATUS' }, JSON.stringify(v11));
  assert.equal(r.command, 'STATUS');
  throwsCode(() => parseCniRequest({ CNI_COMMAND: 'STATUS' }, stdin), 1, 'STATUS at 1.0.0');
});

test('GC parses the valid attachments the runtime still uses', () => {
  const r = parseCniRequest(
    { CNI_COMMAND: 'GC' },
    JSON.stringify({ ...v11, 'cni.dev/valid-attachments': [{ containerID: 'c1', ifname: 'eth0' }] }),
  );
  assert.deepEqual(r.command === 'GC' && r.validAttachments, [{ containerId: 'c1', ifName: 'eth0' }]);
});

test('GC reads cni.dev/attachments (the key of the 1.1.0 tag) when cni.dev/valid-attachments is absent, and prefers the latter', () => {
  const only = parseCniRequest(
    { CNI_COMMAND: 'GC' },
    JSON.stringify({ ...v11, 'cni.dev/attachments': [{ containerID: 'c2', ifname: 'eth1' }] }),
  );
  assert.deepEqual(only.command === 'GC' && only.validAttachments, [{ containerId: 'c2', ifName: 'eth1' }]);
  const both = parseCniRequest(
    { CNI_COMMAND: 'GC' },
    JSON.stringify({
      ...v11,
      'cni.dev/valid-attachments': [{ containerID: 'c1', ifname: 'eth0' }],
      'cni.dev/attachments': [{ containerID: 'c2', ifname: 'eth1' }],
    }),
  );
  assert.deepEqual(both.command === 'GC' && both.validAttachments, [{ containerId: 'c1', ifName: 'eth0' }]);
  throwsCode(
    () =>
      parseCniRequest(
        { CNI_COMMAND: 'GC' },
        JSON.stringify({ ...v11, 'cni.dev/attachments': [{ ifname: 'eth1' }] }),
      ),
    7,
    'entry without containerID under the fallback key',
  );
});

test('GC without a valid-attachments list is refused (code 7), so nothing live is collected', () => {
  throwsCode(() => parseCniRequest({ CNI_COMMAND: 'GC' }, JSON.stringify(v11)), 7, 'missing list');
  throwsCode(
    () =>
      parseCniRequest(
        { CNI_COMMAND: 'GC' },
        JSON.stringify({ ...v11, 'cni.dev/valid-attachments': [{ containerID: 'c1' }] }),
      ),
    7,
    'entry without ifname',
  );
  throwsCode(() => parseCniRequest({ CNI_COMMAND: 'GC' }, stdin), 1, 'GC at 1.0.0');
});
