// The fake kernel's own rules, where vpcnet depends on the real kernel's answers. (That the fake
// and the real kernel agree is checked by the scenario table, run against both.)
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isAlreadyGone } from '../../plan/kernel-op.ts';
import { FakeKernel } from './fake-kernel.ts';

const POD = { side: 'pod', path: '/var/run/netns/p1' } as const;
const NODE = { side: 'node' } as const;
const veth = { op: 'vethAdd', name: 'eth0', mtu: 1500, peer: 'vpc1', peerMac: '02:00:00:00:00:01' } as const;

test('adding what exists fails with "File exists"; deleting what is gone fails with a "gone" answer', async () => {
  const k = new FakeKernel();
  assert.deepEqual((await k.run(POD, [veth], 'stop')).entered, true);
  const again = await k.run(POD, [veth], 'stop');
  assert.ok(again.entered && /File exists/.test(again.failures[0]?.message ?? ''));
  const gone = await k.run(
    NODE,
    [
      { op: 'linkDel', dev: 'nope' },
      { op: 'routeDel', dst: '10.0.0.5/32', dev: 'vpc1', table: 254 },
      { op: 'ruleDel', rule: { priority: 512, to: '10.0.0.5/32', table: 254 } },
      { op: 'addrDel', dev: 'vpc1', cidr: '10.0.0.5/32' },
    ],
    'all',
  );
  assert.ok(gone.entered);
  assert.equal(gone.failures.length, 4);
  assert.ok(
    gone.failures.every((f) => isAlreadyGone(f.message)),
    JSON.stringify(gone.failures),
  );
});

test("'stop' ends a run at the first failure, 'all' runs everything", async () => {
  const k = new FakeKernel();
  const ops = [
    { op: 'linkUp', dev: 'missing' },
    { op: 'ruleAdd', rule: { priority: 512, to: '10.0.0.5/32', table: 254 } },
  ] as const;
  const stop = await k.run(NODE, ops, 'stop');
  assert.ok(stop.entered && stop.failures.length === 1 && k.ns().rules.length === 0);
  const all = await k.run(NODE, ops, 'all');
  assert.ok(all.entered && all.failures.length === 1 && k.ns().rules.length === 1);
});

test("a branch device above its trunk's MTU is refused as the kernel refuses it; one VLAN ID per trunk", async () => {
  const k = new FakeKernel();
  k.addLink('trunk', '02:0e:0e:00:00:07');
  const device = {
    op: 'trunkDeviceAdd',
    name: 'vlb1',
    parent: 'trunk',
    mac: '02:0b:0b:00:00:07',
    mtu: 9001,
    vlanId: 7,
    driver: 'vlan',
  } as const;
  const tooBig = await k.run(NODE, [device], 'stop');
  assert.deepEqual(tooBig.entered && tooBig.failures.map((f) => f.message), [
    'RTNETLINK answers: Invalid argument',
  ]);
  assert.deepEqual(await k.run(NODE, [{ op: 'linkUp', dev: 'trunk', mtu: 9001 }, device], 'stop'), {
    entered: true,
    failures: [],
  });
  const sameVlan = await k.run(NODE, [{ ...device, name: 'vlb2' }], 'stop');
  assert.ok(sameVlan.entered && /File exists/.test(sameVlan.failures[0]?.message ?? ''));
});

test('deleting a veth end deletes its peer and their routes and neighbours; rules stay', async () => {
  const k = new FakeKernel();
  await k.run(
    POD,
    [veth, { op: 'neighAdd', dev: 'eth0', ip: '169.254.1.1', lladdr: '02:00:00:00:00:01' }],
    'stop',
  );
  await k.run(
    NODE,
    [
      { op: 'routeAdd', dst: '10.0.0.5/32', dev: 'vpc1', table: 254, scopeLink: true },
      { op: 'ruleAdd', rule: { priority: 512, to: '10.0.0.5/32', table: 254 } },
      { op: 'linkDel', dev: 'vpc1' },
    ],
    'stop',
  );
  assert.equal(k.link('eth0', POD.path), undefined);
  assert.deepEqual(k.ns(POD.path).neighbours, []);
  assert.deepEqual(k.ns().routes, []);
  assert.equal(k.ns().rules.length, 1);
});

test('a deleted namespace cannot be entered, and takes its veths with it', async () => {
  const k = new FakeKernel();
  await k.run(POD, [veth], 'stop');
  k.deleteNetns(POD.path);
  assert.deepEqual(k.veths(), []);
  const r = await k.run(POD, [veth], 'stop');
  assert.ok(!r.entered && /No such file or directory/.test(r.reason));
  assert.deepEqual(await k.readPod(POD.path), { reachable: false, reason: 'No such file or directory' });
});

test('SNAT membership needs the set; the set exists only after setupSnat', async () => {
  const k = new FakeKernel();
  const before = await k.run(NODE, [{ op: 'snatAdd', ip: '10.0.0.5' }], 'stop');
  assert.ok(before.entered && /No such file or directory/.test(before.failures[0]?.message ?? ''));
  await k.setupSnat({ vpcCidrs: ['10.0.0.0/16'], snatSource: '10.0.0.10' });
  await k.run(NODE, [{ op: 'snatAdd', ip: '10.0.0.5' }], 'stop');
  assert.deepEqual(k.snatElements(), ['10.0.0.5']);
});

test('an injected failure hits the next matching operation once and applies nothing', async () => {
  const k = new FakeKernel();
  k.failNext((op) => op.op === 'ruleAdd' && op.rule.priority === 1536, 'boom');
  const rule = (priority: number) =>
    ({ op: 'ruleAdd', rule: { priority, to: '10.0.0.5/32', table: 254 } }) as const;
  const r = await k.run(NODE, [rule(512), rule(1536), rule(1536)], 'all');
  assert.ok(r.entered);
  assert.deepEqual(r.failures, [{ index: 1, message: 'boom' }]);
  assert.equal(k.ns().rules.length, 2);
});
