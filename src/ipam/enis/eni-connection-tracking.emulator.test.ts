// The ENIs the pool creates get the primary ENI's connection-tracking timeouts (upstream 1.23),
// through the real driver and the emulator: a node launched with shortened timeouts has them on
// every ENI it grows; a node launched without any sends none, so EC2's defaults stay.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Ledger } from '../../ledger/ledger.ts';
import { MemoryLedgerStore } from '../../ledger/testing/memory-store.ts';
import { AddressPool } from '../pool/pool.ts';
import { PoolManager } from '../pool/pool-manager.ts';
import { type EmulatedNode, startEmulatedNode } from '../testing/emulated-node.ts';

/** Grows the node's pool by one ENI and returns every ENI attached to it, as the emulator holds them. */
async function growOneEni(node: EmulatedNode) {
  const clock = { now: () => 1_000_000 };
  const metadata = await node.cloud.metadata();
  const manager = new PoolManager({
    cloud: node.cloud,
    pool: new AddressPool({ cooldownMs: 30_000 }),
    clock,
    log: { info() {}, warn() {}, error() {} },
    metadata,
    limits: await node.cloud.instanceTypeLimits(metadata.instanceType),
    // More free addresses than a t3.medium's primary ENI holds (5): it fills, then an ENI comes.
    targets: { warmEniTarget: 1, warmIpTarget: 8, cooldownSeconds: 30 },
    ledger: await Ledger.open(new MemoryLedgerStore(), clock),
  });
  await manager.init({ configureLinks: true });
  const decisions: string[] = [];
  while (decisions.length < 5 && !decisions.includes('attachEni'))
    decisions.push((await manager.runPass()).kind);
  assert.ok(decisions.includes('attachEni'), `no ENI attached: ${decisions.join(', ')}`);
  await manager.stop();
  return (await node.truth()).filter((e) => e.attachment?.instanceId === metadata.instanceId);
}

test("a new ENI is created with the primary ENI's connection-tracking timeouts", async () => {
  const timeouts = { tcpEstablishedTimeout: 1800, udpStreamTimeout: 100, udpTimeout: 40 };
  const node = await startEmulatedNode({ instanceType: 't3.medium', seed: 23, connectionTracking: timeouts });
  try {
    const enis = await growOneEni(node);
    assert.deepEqual(
      enis.map((e) => [e.attachment?.deviceIndex, e.connectionTracking]),
      [
        [0, timeouts],
        [1, timeouts],
      ],
    );
  } finally {
    await node.close();
  }
});

test('only the timeouts the primary ENI has are copied', async () => {
  const node = await startEmulatedNode({
    instanceType: 't3.medium',
    seed: 24,
    connectionTracking: { udpTimeout: 60 },
  });
  try {
    const enis = await growOneEni(node);
    assert.deepEqual(enis.find((e) => e.attachment?.deviceIndex === 1)?.connectionTracking, {
      udpTimeout: 60,
    });
  } finally {
    await node.close();
  }
});

test('a primary ENI without timeouts: new ENIs are created without any (EC2 defaults)', async () => {
  const node = await startEmulatedNode({ instanceType: 't3.medium', seed: 25 });
  try {
    const enis = await growOneEni(node);
    assert.deepEqual(
      enis.map((e) => [e.attachment?.deviceIndex, e.connectionTracking]),
      [
        [0, null],
        [1, null],
      ],
    );
  } finally {
    await node.close();
  }
});
