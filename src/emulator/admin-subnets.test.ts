// The admin routes for extra subnets and ENIConfigs, and what EC2 then shows of them.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CreateNetworkInterfaceCommand, DescribeSubnetsCommand } from '@aws-sdk/client-ec2';
import { startTestEmulator, type TestEmulator } from './testing/test-emulator.ts';

let t: TestEmulator;
before(async () => {
  t = await startTestEmulator();
});
after(() => t.close());

async function admin(method: string, path: string, body?: unknown) {
  const res = await fetch(`${t.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

test('an added subnet is described with its zone, tags and free addresses, and filters by tag and zone', async () => {
  const added = await admin('POST', '/admin/subnets', {
    subnetId: 'subnet-0cni',
    cidr: '10.0.64.0/24',
    availabilityZone: 'us-west-2a',
    tags: { 'kubernetes.io/role/cni': '1' },
  });
  assert.equal(added.status, 201);
  assert.equal(added.json.available, 256 - 5);
  const out = await t.ec2.send(
    new DescribeSubnetsCommand({
      Filters: [
        { Name: 'tag-key', Values: ['kubernetes.io/role/cni'] },
        { Name: 'availability-zone', Values: ['us-west-2a'] },
      ],
    }),
  );
  assert.deepEqual(
    out.Subnets?.map((s) => [s.SubnetId, s.AvailableIpAddressCount, s.Tags?.[0]?.Key]),
    [['subnet-0cni', 251, 'kubernetes.io/role/cni']],
  );
  const untagged = await t.ec2.send(
    new DescribeSubnetsCommand({ Filters: [{ Name: 'availability-zone', Values: ['us-west-2b'] }] }),
  );
  assert.ok(!untagged.Subnets?.some((s) => s.SubnetId === 'subnet-0cni'));
});

test('an ENI created in an added subnet takes its address there and counts against it', async () => {
  const eni = await t.ec2.send(new CreateNetworkInterfaceCommand({ SubnetId: 'subnet-0cni' }));
  assert.match(eni.NetworkInterface?.PrivateIpAddress ?? '', /^10\.0\.64\./);
  const out = await t.ec2.send(new DescribeSubnetsCommand({ SubnetIds: ['subnet-0cni'] }));
  assert.equal(out.Subnets?.[0]?.AvailableIpAddressCount, 250);
});

test('a subnet overlapping another or outside the VPC is refused with the reason', async () => {
  const overlap = await admin('POST', '/admin/subnets', { subnetId: 'subnet-0x', cidr: '10.0.64.128/25' });
  assert.equal(overlap.status, 400);
  assert.match(String(overlap.json.message), /overlaps subnet-0cni/);
  const outside = await admin('POST', '/admin/subnets', { subnetId: 'subnet-0y', cidr: '192.168.0.0/24' });
  assert.match(String(outside.json.message), /inside the VPC's 10.0.0.0\/16/);
});

test('an ENIConfig made through the admin API is served by the Kubernetes slice', async () => {
  const made = await admin('POST', '/admin/eniconfigs', { name: 'us-west-2a', subnet: 'subnet-0cni' });
  assert.equal(made.status, 201);
  const got = await fetch(`${t.url}/apis/crd.k8s.amazonaws.com/v1alpha1/eniconfigs/us-west-2a`);
  assert.deepEqual(((await got.json()) as { spec: unknown }).spec, {
    subnet: 'subnet-0cni',
    securityGroups: [],
  });
});
