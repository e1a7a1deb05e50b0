// IMDS-only mode end to end in ipam: the real pool manager reading the instance's ENIs from the
// emulator's IMDS through the real driver, someone else attaching ENIs and addresses (the
// emulator's admin API, as an operator's tooling would), and the emulator counting EC2 calls. An
// address is lent only once two IMDS reads, the stale window apart, both list it; one a single read
// showed is never lent; and not one EC2 call is made.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import type { Cloud } from '../../cloud/cloud.ts';
import { ImdsOnlyCloud } from '../../cloud/restricted-cloud.ts';
import { Ledger } from '../../ledger/ledger.ts';
import { MemoryLedgerStore } from '../../ledger/testing/memory-store.ts';
import { AddressPool } from '../pool/pool.ts';
import { PoolManager } from '../pool/pool-manager.ts';
import { type EmulatedNode, startEmulatedNode } from '../testing/emulated-node.ts';

const W = 30_000; // VPCNET_IMDS_STALE_SECONDS=30
let clock: { t: number; now(): number };
let node: EmulatedNode;
let manager: PoolManager | undefined;

beforeEach(async () => {
  clock = {
    t: 1_000_000,
    now() {
      return this.t;
    },
  };
  node = await startEmulatedNode({ instanceType: 'm5.large', seed: 31, nowMs: () => clock.t });
});
afterEach(async () => {
  await manager?.stop();
  await node.close();
});

async function admin(
  method: string,
  path: string,
  body: unknown,
): Promise<{ eniId: string; secondaryIps: string[] }> {
  const res = await fetch(`${node.url}${path}`, { method, body: JSON.stringify(body) });
  assert.ok(res.ok, `${method} ${path}: ${res.status} ${await res.clone().text()}`);
  return (await res.json()) as { eniId: string; secondaryIps: string[] };
}

const attachEni = (secondaryIpCount: number) =>
  admin('POST', `/admin/instances/${node.instance.instanceId}/enis`, { secondaryIpCount });

async function ec2Calls(): Promise<Record<string, { calls: number }>> {
  return (
    (await (await fetch(`${node.url}/admin/state`)).json()) as { ec2Calls: Record<string, { calls: number }> }
  ).ec2Calls;
}

async function imdsOnlyManager(pool: AddressPool): Promise<PoolManager> {
  const cloud: Cloud = new ImdsOnlyCloud(node.cloud, node.cloud.imds);
  const metadata = await cloud.metadata();
  manager = new PoolManager({
    cloud,
    pool,
    clock,
    log: { info() {}, warn() {}, error() {} },
    metadata,
    limits: await cloud.instanceTypeLimits(metadata.instanceType),
    targets: { warmEniTarget: 1, cooldownSeconds: 30 },
    ledger: await Ledger.open(new MemoryLedgerStore(), clock),
    provisioning: false,
    lendOnlyConfirmed: true,
    syncIntervalMs: W,
    staleWindowMs: W,
  });
  return manager;
}

test('addresses of a pre-attached ENI are lent only once a second IMDS read, the window after the first, lists them; no EC2 call', async () => {
  const eni = await attachEni(3);
  const pool = new AddressPool({ cooldownMs: 30_000 });
  const m = await imdsOnlyManager(pool);
  await m.init({ configureLinks: true });
  assert.deepEqual(pool.stats(clock.now()), {
    total: 3,
    assigned: 0,
    cooling: 0,
    available: 0,
    unconfirmed: 3,
    enis: 2,
  });
  assert.equal(m.allocate('vpcnet/a/eth0'), undefined, 'one read lends nothing');

  clock.t += W - 1;
  await m.syncWithCloud();
  assert.equal(m.allocate('vpcnet/a/eth0'), undefined, 'a second read too soon confirms nothing');

  clock.t += 1;
  await m.syncWithCloud();
  const got = ['a', 'b', 'c'].map((p) => m.allocate(`vpcnet/${p}/eth0`)?.ip);
  assert.deepEqual(got.sort(), [...eni.secondaryIps].sort());
  assert.equal(m.health().sync.differences.addressUnconfirmed, 3);
  assert.deepEqual(await ec2Calls(), {}, 'not one EC2 call');
});

test('an address one read lists and the next no longer does is never lent; one both list is', async () => {
  const eni = await attachEni(1);
  const pool = new AddressPool({ cooldownMs: 30_000 });
  const m = await imdsOnlyManager(pool);
  await m.init({ configureLinks: true });
  clock.t += W;
  await m.syncWithCloud();
  assert.ok(m.allocate('vpcnet/first/eth0'), 'the first address is confirmed');

  const grown = await admin('POST', `/admin/enis/${eni.eniId}/addresses`, { secondaryIpCount: 2 });
  const [brief, lasting] = grown.secondaryIps.filter((ip) => !eni.secondaryIps.includes(ip));
  clock.t += 1000;
  await m.syncWithCloud(); // the first read of both
  assert.equal(pool.eniIdOf(brief ?? ''), undefined, 'not in the pool after one read');
  await admin('DELETE', `/admin/enis/${eni.eniId}/addresses`, { ips: [brief] });

  clock.t += W;
  await m.syncWithCloud(); // lists `lasting` again, no longer `brief`
  assert.equal(pool.eniIdOf(brief ?? ''), undefined, 'the address a single read showed never joined');
  assert.equal(m.allocate('vpcnet/second/eth0')?.ip, lasting);
  assert.equal(m.allocate('vpcnet/third/eth0'), undefined);
  assert.deepEqual(await ec2Calls(), {});
});

test('an ENI attached after start joins with its addresses held back until a read the window later', async () => {
  const pool = new AddressPool({ cooldownMs: 30_000 });
  const m = await imdsOnlyManager(pool);
  await m.init({ configureLinks: true });
  assert.equal(pool.enis().length, 1);

  const late = await attachEni(2);
  clock.t += 5000;
  await m.syncWithCloud();
  assert.equal(pool.eni(late.eniId)?.deviceNumber, 1, 'the ENI is found at once');
  assert.equal(m.allocate('vpcnet/a/eth0'), undefined, 'its addresses are not lent yet');
  clock.t += W;
  await m.syncWithCloud();
  assert.ok(late.secondaryIps.includes(m.allocate('vpcnet/a/eth0')?.ip ?? ''));
  assert.deepEqual(await ec2Calls(), {});
});
