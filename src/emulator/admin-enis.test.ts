// ENIs someone else attaches (the admin API, for locked-down VPCs), and how the emulator's IMDS
// shows them on the per-ENI paths upstream reads in IMDS-only mode: local-ipv4s with the primary
// first, ipv4-prefix only when the ENI has prefixes (404 otherwise, as on EC2), device-number,
// interface-id, subnet-id and subnet-ipv4-cidr-block. None of it counts as an EC2 call.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { LaunchedInstance } from './api.ts';
import { SUBNET_A, startTestEmulator, type TestEmulator } from './testing/test-emulator.ts';

let t: TestEmulator;
let inst: LaunchedInstance;
let token: string;

before(async () => {
  t = await startTestEmulator({ imdsFallbackInstance: () => inst?.instanceId });
  inst = await t.emulator.launchInstance({ instanceType: 'm5.4xlarge', subnetId: SUBNET_A });
  token = await (
    await fetch(`${t.url}/latest/api/token`, {
      method: 'PUT',
      headers: { 'x-aws-ec2-metadata-token-ttl-seconds': '60' },
    })
  ).text();
});
after(() => t.close());

async function admin(method: string, path: string, body: unknown) {
  const res = await fetch(`${t.url}${path}`, { method, body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

async function imds(path: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`${t.url}/latest/meta-data/${path}`, {
    headers: { 'x-aws-ec2-metadata-token': token },
  });
  return { status: res.status, body: await res.text() };
}

test('a pre-attached ENI takes the lowest free device index with its addresses, and IMDS lists them', async () => {
  const plain = await admin('POST', `/admin/instances/${inst.instanceId}/enis`, { secondaryIpCount: 2 });
  assert.equal(plain.status, 201, JSON.stringify(plain.json));
  const withPrefix = await admin('POST', `/admin/instances/${inst.instanceId}/enis`, {
    secondaryIpCount: 1,
    ipv4PrefixCount: 1,
  });
  assert.deepEqual([plain.json.deviceIndex, withPrefix.json.deviceIndex], [1, 2]);

  const macs = (await imds('network/interfaces/macs/')).body.split('\n');
  assert.equal(macs.length, 3);
  const at = (mac: unknown, leaf: string) => imds(`network/interfaces/macs/${String(mac)}/${leaf}`);
  const secondaries = plain.json.secondaryIps as string[];
  assert.equal(
    (await at(plain.json.mac, 'local-ipv4s')).body,
    [plain.json.primaryIp, ...secondaries].join('\n'),
  );
  assert.equal((await at(plain.json.mac, 'device-number')).body, '1');
  assert.equal((await at(plain.json.mac, 'interface-id')).body, plain.json.eniId);
  assert.equal((await at(plain.json.mac, 'subnet-id')).body, SUBNET_A);
  assert.equal((await at(plain.json.mac, 'subnet-ipv4-cidr-block')).body, '10.0.0.0/24');
  assert.equal((await at(plain.json.mac, 'ipv4-prefix')).status, 404, 'no prefix: no path');
  assert.deepEqual(
    (await at(withPrefix.json.mac, 'ipv4-prefix')).body,
    (withPrefix.json.ipv4Prefixes as string[])[0],
  );
  assert.ok(
    (await imds(`network/interfaces/macs/${String(withPrefix.json.mac)}/`)).body
      .split('\n')
      .includes('ipv4-prefix'),
  );
});

test('addresses are added to and taken off an ENI, and IMDS follows; none of it is an EC2 call', async () => {
  const eni = await admin('POST', `/admin/instances/${inst.instanceId}/enis`, {});
  const eniId = String(eni.json.eniId);
  const grown = await admin('POST', `/admin/enis/${eniId}/addresses`, { secondaryIpCount: 3 });
  const ips = grown.json.secondaryIps as string[];
  assert.equal(ips.length, 3);
  const shrunk = await admin('DELETE', `/admin/enis/${eniId}/addresses`, { ips: [ips[0]] });
  assert.deepEqual(shrunk.json.secondaryIps, ips.slice(1));
  const listed = await imds(`network/interfaces/macs/${String(eni.json.mac)}/local-ipv4s`);
  assert.deepEqual(listed.body.split('\n').slice(1), ips.slice(1));
  const state = (await (await fetch(`${t.url}/admin/state`)).json()) as { ec2Calls: object };
  assert.deepEqual(state.ec2Calls, {});
  assert.equal((await admin('POST', `/admin/enis/${eniId}/addresses`, {})).status, 400);
  assert.equal((await admin('POST', '/admin/instances/i-nope/enis', {})).status, 400);
});

test('named addresses go onto an ENI when free in its subnet (an address moved from another ENI), and are refused while taken', async () => {
  const from = await admin('POST', `/admin/instances/${inst.instanceId}/enis`, { secondaryIpCount: 1 });
  const to = await admin('POST', `/admin/instances/${inst.instanceId}/enis`, {});
  const [moving] = from.json.secondaryIps as string[];
  const taken = await admin('POST', `/admin/enis/${String(to.json.eniId)}/addresses`, { ips: [moving] });
  assert.equal(taken.status, 400, `still on ${String(from.json.eniId)}: ${JSON.stringify(taken.json)}`);
  await admin('DELETE', `/admin/enis/${String(from.json.eniId)}/addresses`, { ips: [moving] });
  const moved = await admin('POST', `/admin/enis/${String(to.json.eniId)}/addresses`, { ips: [moving] });
  assert.equal(moved.status, 200, JSON.stringify(moved.json));
  assert.deepEqual(moved.json.secondaryIps, [moving]);
  assert.equal(
    (await admin('POST', `/admin/enis/${String(to.json.eniId)}/addresses`, { ips: [] })).status,
    400,
  );
});
