import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, test } from 'node:test';
import { AssignPrivateIpAddressesCommand } from '@aws-sdk/client-ec2';
import type { LaunchedInstance } from '../api.ts';
import { SUBNET_A, startTestEmulator, type TestEmulator } from '../testing/test-emulator.ts';

interface Reply {
  readonly status: number;
  readonly body: string;
}

function call(
  url: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  localAddress?: string,
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}${path}`,
      { method, headers, ...(localAddress ? { localAddress } : {}) },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

let t: TestEmulator;
let inst: LaunchedInstance;
let fallback: string | undefined;
let token: string;

before(async () => {
  t = await startTestEmulator({ imdsFallbackInstance: () => fallback });
  inst = await t.emulator.launchInstance({
    instanceType: 'm5.large',
    subnetId: SUBNET_A,
    securityGroupIds: ['sg-7'],
  });
  fallback = inst.instanceId;
  const r = await call(t.url, 'PUT', '/latest/api/token', { 'x-aws-ec2-metadata-token-ttl-seconds': '60' });
  assert.equal(r.status, 200);
  token = r.body;
});
after(() => t.close());

const get = (path: string, localAddress?: string) =>
  call(t.url, 'GET', `/latest/meta-data/${path}`, { 'x-aws-ec2-metadata-token': token }, localAddress);

test('a metadata GET without a token, or with an unknown token, is answered 401', async () => {
  assert.equal((await call(t.url, 'GET', '/latest/meta-data/instance-id')).status, 401);
  const bad = await call(t.url, 'GET', '/latest/meta-data/instance-id', {
    'x-aws-ec2-metadata-token': 'forged',
  });
  assert.equal(bad.status, 401);
});

test('a token PUT with a TTL outside 1..21600 or none is answered 400', async () => {
  for (const ttl of ['0', '21601', 'abc', '-5']) {
    const r = await call(t.url, 'PUT', '/latest/api/token', { 'x-aws-ec2-metadata-token-ttl-seconds': ttl });
    assert.equal(r.status, 400, ttl);
  }
  assert.equal((await call(t.url, 'PUT', '/latest/api/token')).status, 400);
  const max = await call(t.url, 'PUT', '/latest/api/token', {
    'x-aws-ec2-metadata-token-ttl-seconds': '21600',
  });
  assert.equal(max.status, 200);
});

test('identity paths answer for the fallback instance when the source address is unknown', async () => {
  assert.deepEqual(await get('instance-id'), { status: 200, body: inst.instanceId });
  assert.deepEqual(await get('instance-type'), { status: 200, body: 'm5.large' });
  assert.deepEqual(await get('local-ipv4'), { status: 200, body: inst.primaryEni.primaryIp });
  assert.deepEqual(await get('mac'), { status: 200, body: inst.primaryEni.mac });
  assert.deepEqual(await get('placement/availability-zone'), { status: 200, body: 'us-west-2a' });
  assert.deepEqual(await get('placement/region'), { status: 200, body: 'us-west-2' });
});

test('per-MAC paths describe the ENI', async () => {
  const mac = inst.primaryEni.mac;
  assert.deepEqual(await get('network/interfaces/macs/'), { status: 200, body: `${mac}/` });
  const expect: Record<string, string> = {
    'device-number': '0',
    'interface-id': inst.primaryEni.eniId,
    'subnet-id': SUBNET_A,
    'subnet-ipv4-cidr-block': '10.0.0.0/24',
    'vpc-id': 'vpc-0123456789abcdef0',
    'vpc-ipv4-cidr-blocks': '10.0.0.0/16',
    'local-ipv4s': inst.primaryEni.primaryIp,
    'security-group-ids': 'sg-7',
  };
  for (const [key, value] of Object.entries(expect)) {
    assert.deepEqual(await get(`network/interfaces/macs/${mac}/${key}`), { status: 200, body: value }, key);
  }
});

test('local-ipv4s reflects an assign immediately', async () => {
  const out = await t.ec2.send(
    new AssignPrivateIpAddressesCommand({
      NetworkInterfaceId: inst.primaryEni.eniId,
      SecondaryPrivateIpAddressCount: 2,
    }),
  );
  const ips = out.AssignedPrivateIpAddresses!.map((a) => a.PrivateIpAddress);
  const r = await get(`network/interfaces/macs/${inst.primaryEni.mac}/local-ipv4s`);
  assert.equal(r.body, [inst.primaryEni.primaryIp, ...ips].join('\n'));
});

test('the instance identity document names instance, type, region and private IP', async () => {
  const r = await call(t.url, 'GET', '/latest/dynamic/instance-identity/document', {
    'x-aws-ec2-metadata-token': token,
  });
  assert.equal(r.status, 200);
  const doc = JSON.parse(r.body) as Record<string, unknown>;
  assert.deepEqual(
    [doc.instanceId, doc.instanceType, doc.region, doc.availabilityZone, doc.privateIp],
    [inst.instanceId, 'm5.large', 'us-west-2', 'us-west-2a', inst.primaryEni.primaryIp],
  );
});

test('an unknown path is answered 404', async () => {
  assert.equal((await get('no-such-thing')).status, 404);
  assert.equal((await get(`network/interfaces/macs/02:00:00:00:00:00/interface-id`)).status, 404);
});

test('without a source match or a fallback, metadata is answered 404', async () => {
  fallback = undefined;
  try {
    assert.equal((await get('instance-id')).status, 404);
  } finally {
    fallback = inst.instanceId;
  }
});

test('the calling instance is identified by the source address of the request', async () => {
  // A VPC on 127.0.0.0/24: Linux routes all of 127/8 to loopback, so a client can bind the
  // instance's own address as its source.
  const loop = await startTestEmulator({
    vpc: {
      vpcId: 'vpc-1',
      cidr: '127.0.0.0/16',
      region: 'us-west-2',
      subnets: [{ subnetId: 'subnet-loop', cidr: '127.0.0.0/24', availabilityZone: 'us-west-2a' }],
    },
    listen: [{ host: '127.0.0.1', port: 0 }],
  });
  try {
    const a = await loop.emulator.launchInstance({ instanceType: 't3.medium', subnetId: 'subnet-loop' });
    const b = await loop.emulator.launchInstance({ instanceType: 't3.medium', subnetId: 'subnet-loop' });
    const tok = (
      await call(
        loop.url,
        'PUT',
        '/latest/api/token',
        { 'x-aws-ec2-metadata-token-ttl-seconds': '5' },
        b.primaryEni.primaryIp,
      )
    ).body;
    for (const who of [a, b]) {
      const r = await call(
        loop.url,
        'GET',
        '/latest/meta-data/instance-id',
        { 'x-aws-ec2-metadata-token': tok },
        who.primaryEni.primaryIp,
      );
      assert.deepEqual(r, { status: 200, body: who.instanceId });
    }
  } finally {
    await loop.close();
  }
});

function adminPost(path: string, body: unknown): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${t.url}${path}`,
      { method: 'POST', headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

// Last in this file: it adds a CIDR to the VPC that the tests above do not expect.
test('a CIDR block added to the VPC through the admin API is listed by vpc-ipv4-cidr-blocks', async () => {
  const blocks = `network/interfaces/macs/${inst.primaryEni.mac}/vpc-ipv4-cidr-blocks`;
  const added = await adminPost('/admin/vpc-cidrs', { cidr: '100.64.0.0/16' });
  assert.equal(added.status, 201);
  assert.deepEqual(JSON.parse(added.body), { vpcCidrs: ['10.0.0.0/16', '100.64.0.0/16'] });
  assert.deepEqual(await get(blocks), { status: 200, body: '10.0.0.0/16\n100.64.0.0/16' });
  assert.deepEqual(await get(`network/interfaces/macs/${inst.primaryEni.mac}/vpc-ipv4-cidr-block`), {
    status: 200,
    body: '10.0.0.0/16',
  });
  const overlapping = await adminPost('/admin/vpc-cidrs', { cidr: '10.0.128.0/17' });
  assert.equal(overlapping.status, 400);
  assert.match(overlapping.body, /overlaps the VPC's CIDR block 10\.0\.0\.0\/16/);
  assert.equal((await adminPost('/admin/vpc-cidrs', { cidr: 'nope' })).status, 400);
});
