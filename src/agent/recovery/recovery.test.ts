import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Dataplane } from '../../dataplane/dataplane.ts';
import { FakeKernel } from '../../dataplane/testing/fake-kernel.ts';
import { silentLogger } from '../../infra/log.ts';
import { AddressPool } from '../../ipam/pool/pool.ts';
import { Ledger } from '../../ledger/ledger.ts';
import { MemoryLedgerStore } from '../../ledger/testing/memory-store.ts';
import { hostVethName } from '../../plan/names.ts';
import { planRegularPod } from '../../plan/pod-plan.ts';
import type { PodMetadata, PodSource } from '../../pods/watch/pod-source.ts';
import { sweepRecovered } from './recovered-release.ts';
import { poolRecoveryAddresses, QUARANTINE_MIN_MS, recoverFromNode, recoveryView } from './recovery.ts';

const NOW = 1_000_000;
const ENI = 'eni-2';
const key = { network: 'vpcnet', containerId: 'c1', ifName: 'eth0' };

function apiPod(name: string, podIp: string): PodMetadata {
  return {
    namespace: 'default',
    name,
    uid: `u-${name}`,
    nodeName: 'node1',
    annotations: {},
    requestsPodEni: false,
    podIp,
  };
}

async function node(pods: PodMetadata[]) {
  const kernel = new FakeKernel();
  const dataplane = new Dataplane(kernel);
  await dataplane.setupNode({ vpcCidrs: ['10.0.0.0/16'], snatSource: '10.0.0.10' });
  // A pod the kernel shows (its record was lost with the ledger).
  await dataplane.create(
    '/var/run/netns/p1',
    planRegularPod({
      key,
      vethPrefix: 'vpc',
      ip: '10.0.1.11',
      eniId: ENI,
      routeTable: 3,
      mtu: 9001,
      snat: true,
    }),
  );
  const pool = new AddressPool({ cooldownMs: 5_000 });
  pool.addEni({
    eniId: ENI,
    mac: '02:00:00:00:00:02',
    deviceNumber: 2,
    subnetId: 'subnet-1',
    primaryIp: '10.0.1.10',
    subnetCidr: '10.0.1.0/24',
  });
  pool.addAddresses(ENI, ['10.0.1.11', '10.0.1.12', '10.0.1.13']);
  const ledger = await Ledger.open(new MemoryLedgerStore(), { now: () => NOW });
  const podsNow = [...pods];
  const source: PodSource = {
    lookup: async (namespace, name) => podsNow.find((p) => p.namespace === namespace && p.name === name),
    listOnNode: async () => podsNow,
  };
  const deps = {
    ledger,
    addresses: poolRecoveryAddresses(pool),
    dataplane,
    pods: source,
    log: silentLogger,
    now: () => NOW,
    vethPrefix: 'vpc',
    protectedAddresses: new Set(['10.0.1.10']),
  };
  return { kernel, dataplane, pool, ledger, podsNow, deps };
}

test('recovery holds what the kernel and the API show and quarantines what only EC2 lists', async () => {
  const n = await node([apiPod('api-only', '10.0.1.12'), apiPod('host-net-elsewhere', '10.9.9.9')]);
  const start = await recoverFromNode(n.deps, { reason: 'ledgerMissing' });
  assert.ok(start);
  const held = n.ledger.recovered();
  const fromKernel = held.find((r) => r.ip === '10.0.1.11');
  assert.ok(fromKernel);
  assert.equal(fromKernel.eniId, ENI);
  assert.deepEqual(
    fromKernel.resources.map((r) => r.kind).sort(),
    ['route', 'rule', 'rule', 'snat', 'veth'],
    'its veth, host route, both rules and SNAT element',
  );
  assert.deepEqual(held.find((r) => r.ip === '10.0.1.12')?.pod, {
    namespace: 'default',
    name: 'api-only',
    uid: 'u-api-only',
  });
  assert.equal(n.pool.state('10.0.1.11')?.kind, 'assigned');
  assert.equal(n.pool.state('10.0.1.12')?.kind, 'assigned');
  assert.deepEqual(start.quarantined, [{ ip: '10.0.1.13', eniId: ENI, until: NOW + QUARANTINE_MIN_MS }]);
  assert.equal(n.pool.allocate('new', NOW + QUARANTINE_MIN_MS - 1), undefined, 'lent during quarantine');
  assert.equal(n.pool.allocate('new', NOW + QUARANTINE_MIN_MS)?.ip, '10.0.1.13');
  assert.deepEqual(
    n.ledger.coolingAddresses().map((c) => c.ip),
    ['10.0.1.13'],
    'the quarantine survives a restart',
  );
  const view = recoveryView(n.ledger, start, NOW);
  assert.ok(view.active);
  assert.equal(view.reason, 'ledgerMissing');
  assert.equal(view.held.length, 2);
});

test('the sweep releases a record once its veth is gone, and an API-held one once its pod left the API', async () => {
  const n = await node([apiPod('api-only', '10.0.1.12')]);
  await recoverFromNode(n.deps, { reason: 'ledgerCorrupt' });
  const sweep = () =>
    n.dataplane
      .observeNode()
      .then((v) =>
        sweepRecovered({ ...n.deps, addresses: { release: (ip) => void n.pool.release(ip, NOW) } }, v),
      );
  assert.deepEqual(await sweep(), [], 'nothing is gone yet');
  n.podsNow.length = 0;
  assert.equal((await sweep()).length, 1);
  assert.equal(n.pool.state('10.0.1.12')?.kind, 'cooling');
  n.kernel.deleteNetns('/var/run/netns/p1');
  assert.equal(n.kernel.veths().includes(hostVethName(key, 'vpc')), false);
  assert.deepEqual(await sweep(), [`recovered 10.0.1.11 (${hostVethName(key, 'vpc')})`]);
  assert.deepEqual(n.kernel.snatElements(), [], 'its SNAT element went with it');
  assert.equal(n.pool.state('10.0.1.11')?.kind, 'cooling');
  assert.deepEqual(n.ledger.recovered(), []);
});

test('with nothing in the kernel, the API or on vpcnet ENIs, there is no recovery', async () => {
  const kernel = new FakeKernel();
  const pool = new AddressPool({ cooldownMs: 0 });
  const ledger = await Ledger.open(new MemoryLedgerStore(), { now: () => NOW });
  const start = await recoverFromNode(
    {
      ledger,
      addresses: poolRecoveryAddresses(pool),
      dataplane: new Dataplane(kernel),
      pods: { lookup: async () => undefined },
      log: silentLogger,
      now: () => NOW,
      vethPrefix: 'vpc',
      protectedAddresses: new Set(),
    },
    { reason: 'ledgerMissing' },
  );
  assert.equal(start, undefined);
  assert.deepEqual(recoveryView(ledger, start, NOW), { active: false });
});

test("a live pod the API shows is held even when the kernel and vpcnet's ENIs show nothing: no fresh start re-lends its address", async () => {
  // The pod's address is on the primary ENI (alone no evidence: anyone may have assigned it), and
  // the kernel lost the pod's veth and rules (a reboot): only the API knows the pod is there.
  const pool = new AddressPool({ cooldownMs: 5_000 });
  pool.addEni({
    eniId: 'eni-1',
    mac: '02:00:00:00:00:01',
    deviceNumber: 0,
    subnetId: 'subnet-1',
    primaryIp: '10.0.0.10',
    subnetCidr: '10.0.0.0/24',
  });
  pool.addAddresses('eni-1', ['10.0.0.21', '10.0.0.22']);
  const ledger = await Ledger.open(new MemoryLedgerStore(), { now: () => NOW });
  const start = await recoverFromNode(
    {
      ledger,
      addresses: poolRecoveryAddresses(pool),
      dataplane: new Dataplane(new FakeKernel()),
      pods: { lookup: async () => undefined, listOnNode: async () => [apiPod('web', '10.0.0.21')] },
      log: silentLogger,
      now: () => NOW,
      vethPrefix: 'vpc',
      protectedAddresses: new Set(['10.0.0.10']),
    },
    { reason: 'ledgerMissing' },
  );
  assert.ok(start, 'recovery ran: not a fresh start');
  assert.deepEqual(
    ledger.recovered().map((r) => [r.ip, r.eniId, r.pod?.name]),
    [['10.0.0.21', 'eni-1', 'web']],
  );
  assert.equal(pool.state('10.0.0.21')?.kind, 'assigned');
  // The other address is quarantined, then lent; the pod's never is.
  assert.equal(pool.allocate('new', NOW)?.ip, undefined);
  assert.equal(pool.allocate('new', NOW + QUARANTINE_MIN_MS)?.ip, '10.0.0.22');
  assert.equal(pool.allocate('newer', NOW + QUARANTINE_MIN_MS), undefined);
});
