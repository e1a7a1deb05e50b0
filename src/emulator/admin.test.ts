import assert from 'node:assert/strict';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { parseFaultSettings } from './admin.ts';
import { SUBNET_A, startTestEmulator, type TestEmulator } from './testing/test-emulator.ts';

let dir: string;
let socketPath: string;
let t: TestEmulator;

function viaSocket(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { socketPath, method, path, headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, json: text === '' ? undefined : JSON.parse(text) }),
        );
      },
    );
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vpcnet-emu-'));
  socketPath = join(dir, 'admin.sock');
  // A stale file where the socket goes, as a crashed emulator leaves it.
  await writeFile(socketPath, 'stale');
  t = await startTestEmulator({ adminSocket: socketPath });
});
after(async () => {
  await t.close();
  await rm(dir, { recursive: true, force: true });
});

test('the admin socket replaces a stale file and is created with mode 0600', async () => {
  const s = await stat(socketPath);
  assert.ok(s.isSocket());
  assert.equal(s.mode & 0o777, 0o600);
});

test('POST /admin/instances over the socket launches an instance that EC2 then knows', async () => {
  const r = await viaSocket('POST', '/admin/instances', { instanceType: 'c5.large', subnetId: SUBNET_A });
  assert.equal(r.status, 201);
  const launched = r.json as {
    instanceId: string;
    primaryEni: { eniId: string };
    subnet: { gateway: string };
  };
  assert.match(launched.instanceId, /^i-[0-9a-f]{17}$/);
  assert.equal(launched.subnet.gateway, '10.0.0.1');
  const described = await t.post({ Action: 'DescribeInstances', 'InstanceId.1': launched.instanceId });
  assert.equal(described.status, 200);
  assert.ok(described.body.includes(launched.primaryEni.eniId));
});

test('DELETE /admin/instances/{id} terminates: the instance and its primary ENI are gone', async () => {
  const launched = (
    await viaSocket('POST', '/admin/instances', { instanceType: 'm5.large', subnetId: SUBNET_A })
  ).json as { instanceId: string; primaryEni: { eniId: string } };
  const r = await viaSocket('DELETE', `/admin/instances/${launched.instanceId}`);
  assert.equal(r.status, 204);
  const state = (await viaSocket('GET', '/admin/state')).json as {
    instances: { instanceId: string }[];
    enis: { eniId: string }[];
  };
  assert.ok(!state.instances.some((i) => i.instanceId === launched.instanceId));
  assert.ok(!state.enis.some((e) => e.eniId === launched.primaryEni.eniId));
  assert.equal((await viaSocket('DELETE', `/admin/instances/${launched.instanceId}`)).status, 400);
});

test('PUT /admin/faults on a TCP listener takes effect on EC2 calls', async () => {
  const put = await fetch(`${t.url}/admin/faults`, {
    method: 'PUT',
    body: JSON.stringify({ throttleRate: 1, actions: ['DescribeSubnets'] }),
  });
  assert.equal(put.status, 204);
  assert.equal((await t.post({ Action: 'DescribeSubnets' })).status, 503);
  assert.equal((await t.post({ Action: 'DescribeInstances' })).status, 200);
  await fetch(`${t.url}/admin/faults`, { method: 'PUT', body: '{}' });
  assert.equal((await t.post({ Action: 'DescribeSubnets' })).status, 200);
});

test('fault settings from JSON keep both stale-read lags', () => {
  assert.deepEqual(parseFaultSettings({ staleReadMs: 100, imdsStaleReadMs: 900, imds: false }), {
    staleReadMs: 100,
    imdsStaleReadMs: 900,
    imds: false,
  });
  assert.throws(() => parseFaultSettings({ imdsStaleReadMs: 'late' }), /imdsStaleReadMs must be a number/);
});

test('GET /admin/state counts the EC2 calls answered, per action, failures included', async () => {
  const calls = async () =>
    (
      (await viaSocket('GET', '/admin/state')).json as {
        ec2Calls: Record<string, { calls: number; errors: number }>;
      }
    ).ec2Calls;
  const before = (await calls()).DescribeSubnets ?? { calls: 0, errors: 0 };
  await viaSocket('PUT', '/admin/faults', { errorRate: 1, actions: ['DescribeSubnets'] });
  assert.equal((await t.post({ Action: 'DescribeSubnets' })).status, 500);
  await viaSocket('PUT', '/admin/faults', {});
  assert.equal((await t.post({ Action: 'DescribeSubnets' })).status, 200);
  assert.deepEqual((await calls()).DescribeSubnets, { calls: before.calls + 2, errors: before.errors + 1 });
});

test('malformed admin requests are answered 400 with a reason', async () => {
  const missing = await viaSocket('POST', '/admin/instances', { instanceType: 'm5.large' });
  assert.equal(missing.status, 400);
  const unknownType = await viaSocket('POST', '/admin/instances', {
    instanceType: 'q1.big',
    subnetId: SUBNET_A,
  });
  assert.equal((unknownType.json as { code: string }).code, 'InvalidParameterValue');
  const badFaults = await viaSocket('PUT', '/admin/faults', { errorRate: 'often' });
  assert.equal(badFaults.status, 400);
});

test('closing the emulator ends open watches and removes the socket', async () => {
  const other = await startTestEmulator({ adminSocket: join(dir, 'other.sock') });
  let closed: Promise<void> | undefined;
  const ended = new Promise<void>((resolve, reject) => {
    const req = request(`${other.url}/api/v1/pods?watch=true`, (res) => {
      res.resume();
      res.on('end', resolve);
      res.on('error', () => resolve());
      closed = other.close();
    });
    req.on('error', reject);
    req.end();
  });
  await ended;
  await closed;
  await assert.rejects(stat(join(dir, 'other.sock')), { code: 'ENOENT' });
});

test('GET /admin/traffic without a fabric answers 409 saying there is nothing to count', async () => {
  const r = await viaSocket('GET', '/admin/traffic');
  assert.equal(r.status, 409);
  assert.match((r.json as { message: string }).message, /no fabric/);
});
