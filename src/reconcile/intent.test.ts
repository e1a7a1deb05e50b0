import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addAttachment } from '../agent/add.ts';
import type { AttachRequest, OperationContext } from '../agent/context.ts';
import { silentLogger } from '../agent/log.ts';
import type { NodeObservation, PodNetworkSpec } from '../dataplane/dataplane.ts';
import { FakeDataplane } from '../dataplane/fake.ts';
import { Ledger } from '../ledger/ledger.ts';
import { MemoryLedgerStore } from '../ledger/store.ts';
import { noPodSource } from '../pods/pod-source.ts';
import { hostDrift, intendedSpec } from './intent.ts';

async function addThroughTheAgent(over: Partial<AttachRequest>) {
  const dataplane = new FakeDataplane();
  await dataplane.setupNode({ vpcCidrs: ['10.0.0.0/16'], snatSource: '10.0.0.10' });
  const ledger = await Ledger.open(new MemoryLedgerStore(), { now: () => 0 });
  const ctx: OperationContext = {
    ledger,
    addresses: {
      allocate: () => ({ ip: '10.0.1.21', eniId: 'eni-1', routeTable: 2 }),
      waitForAddress: async () => {},
      release() {},
      unreserve() {},
    },
    dataplane,
    pods: noPodSource,
    node: { vpcCidrs: ['10.0.0.0/16'], primaryIp: '10.0.0.10' },
    log: silentLogger,
    now: () => 0,
    vethPrefix: 'vpc',
    defaultMtu: 9001,
    addWaitMs: 0,
    netnsExists: async () => true,
    enablePodEni: false,
    netnsIdentity: async () => undefined,
  };
  const req: AttachRequest = {
    key: { network: 'vpcnet', containerId: 'c1', ifName: 'eth0' },
    netns: '/var/run/netns/pod-1',
    pod: { namespace: 'default', name: 'web-0', uid: 'u1' },
    mtu: undefined,
    vethPrefix: undefined,
    prevResultIps: [],
    ...over,
  };
  await addAttachment(ctx, req);
  const built = dataplane.calls.find((c) => c.op === 'addPod')?.arg as PodNetworkSpec;
  const att = ledger.get(req.key);
  assert.ok(att);
  return { built, att };
}

test('the intended spec of a recorded attachment is the spec its ADD built, also with a per-network prefix and MTU', async () => {
  for (const over of [{}, { vethPrefix: 'abc', mtu: 1400 }]) {
    const { built, att } = await addThroughTheAgent(over);
    assert.deepEqual(intendedSpec(att, 9001), built);
  }
});

test('host drift is judged against one observation of the node, in inspectPod wording', () => {
  const spec: PodNetworkSpec = {
    netnsPath: '/var/run/netns/p',
    ifName: 'eth0',
    hostVeth: 'vpc0000000000a1',
    hostMac: '02:00:00:00:00:a1',
    ip: '10.0.1.21',
    mtu: 9001,
    routeTable: 2,
    snat: true,
  };
  const healthy: NodeObservation = {
    veths: [
      { ifname: 'vpc0000000000a1', address: '02:00:00:00:00:a1', flags: ['UP'], mtu: 9001, addresses: [] },
    ],
    routes: [{ dst: '10.0.1.21', dev: 'vpc0000000000a1' }],
    rules: [
      { priority: 512, src: 'all', dst: '10.0.1.21', table: 254 },
      { priority: 1536, src: '10.0.1.21', table: 2 },
    ],
    snatElements: ['10.0.1.21'],
  };
  assert.deepEqual(hostDrift(spec, healthy), []);
  assert.deepEqual(
    hostDrift(spec, { ...healthy, routes: [], rules: [], snatElements: [] }).map((d) => d.piece),
    ['hostRoute', 'ruleTo', 'ruleFrom', 'snat'],
  );
  assert.deepEqual(hostDrift(spec, { ...healthy, veths: [] })[0], {
    piece: 'veth',
    problem: 'host veth vpc0000000000a1 missing',
  });
});
