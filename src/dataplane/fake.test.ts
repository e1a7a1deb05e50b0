import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PodNetworkSpec } from './dataplane.ts';
import { DataplaneError } from './errors.ts';
import { FakeDataplane } from './fake.ts';

function spec(over: Partial<PodNetworkSpec> = {}): PodNetworkSpec {
  return {
    netnsPath: '/var/run/netns/pod-a',
    ifName: 'eth0',
    hostVeth: 'vpc0000000000a1',
    hostMac: '02:00:00:00:00:a1',
    ip: '10.0.0.5',
    mtu: 9001,
    routeTable: 2,
    snat: true,
    ...over,
  };
}

async function nodeReady(): Promise<FakeDataplane> {
  const dp = new FakeDataplane();
  await dp.setupNode({ vpcCidrs: ['10.0.0.0/16'], snatSource: '10.0.0.10' });
  return dp;
}

test('fake addPod returns the resources it created, and they are exactly what the model holds', async () => {
  const dp = await nodeReady();
  const { resources, podInterface } = await dp.addPod(spec());
  assert.deepEqual(resources, [
    { kind: 'veth', hostName: 'vpc0000000000a1' },
    { kind: 'hostRoute', dst: '10.0.0.5/32', dev: 'vpc0000000000a1' },
    { kind: 'rule', priority: 512, to: '10.0.0.5/32', table: 254 },
    { kind: 'rule', priority: 1536, from: '10.0.0.5/32', table: 2 },
    { kind: 'snat', ip: '10.0.0.5' },
  ]);
  assert.deepEqual(dp.resources(), resources);
  assert.match(podInterface.mac, /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/);
  assert.ok(dp.hasPod('vpc0000000000a1'));
  assert.deepEqual(await dp.inspectPod(spec()), []);
});

test('fake addPod of an existing host veth fails and leaves the existing one alone', async () => {
  const dp = await nodeReady();
  await dp.addPod(spec());
  await assert.rejects(dp.addPod(spec({ netnsPath: '/var/run/netns/pod-b', ip: '10.0.0.6' })), /File exists/);
  assert.ok(dp.hasPod('vpc0000000000a1'));
  assert.deepEqual(await dp.inspectPod(spec()), []);
});

test('an injected failure at a named step rolls back everything addPod did, once', async () => {
  for (const step of ['podAddress', 'hostRoute', 'ruleFrom', 'snat'] as const) {
    const dp = await nodeReady();
    dp.failNext(step, 'boom');
    await assert.rejects(dp.addPod(spec()), (err: unknown) => {
      assert.ok(err instanceof DataplaneError);
      assert.equal(err.step, step);
      assert.equal(err.hostVeth, 'vpc0000000000a1');
      return true;
    });
    assert.deepEqual(dp.resources(), [], `after failing at ${step}`);
    assert.equal(dp.podInterface('/var/run/netns/pod-a', 'eth0'), undefined);
    await dp.addPod(spec());
    assert.ok(dp.hasPod('vpc0000000000a1'), 'the failure was one-shot');
  }
});

test('fake rollback keeps a rule that existed before the failed addPod (not ours)', async () => {
  const dp = await nodeReady();
  dp.rules.push({ priority: 1536, from: '10.0.0.5/32', table: 2 });
  await assert.rejects(dp.addPod(spec()), /File exists/);
  assert.deepEqual(dp.resources(), [{ kind: 'rule', priority: 1536, from: '10.0.0.5/32', table: 2 }]);
});

test('fake addPod with SNAT before setupNode fails like the kernel (no set)', async () => {
  const dp = new FakeDataplane();
  await assert.rejects(dp.addPod(spec()), /No such file or directory/);
  assert.deepEqual(dp.resources(), []);
});

test('fake removeResources removes only what is listed, and twice is fine', async () => {
  const dp = await nodeReady();
  const a = await dp.addPod(spec());
  await dp.addPod(spec({ netnsPath: '/var/run/netns/pod-b', hostVeth: 'vpc0000000000b2', ip: '10.0.0.6' }));
  await dp.removeResources([{ kind: 'address', ip: '10.0.0.5', eniId: 'eni-1' }, ...a.resources]);
  await dp.removeResources(a.resources);
  assert.equal(dp.hasPod('vpc0000000000a1'), false);
  assert.ok(dp.hasPod('vpc0000000000b2'));
  assert.deepEqual(dp.snatElements(), ['10.0.0.6']);
  assert.equal(dp.resources().length, 5);
});

test('a deleted pod netns takes its veth and routes with it, but rules stay until removed', async () => {
  const dp = await nodeReady();
  const { resources } = await dp.addPod(spec());
  dp.deleteNetns('/var/run/netns/pod-a');
  assert.equal(dp.hasPod('vpc0000000000a1'), false);
  assert.equal(dp.rules.length, 2);
  const problems = await dp.inspectPod(spec());
  assert.equal(problems[0], 'pod netns /var/run/netns/pod-a unreachable: No such file or directory');
  await dp.removeResources(resources);
  assert.deepEqual(dp.resources(), []);
  await assert.rejects(dp.addPod(spec()), /nsenter/);
});

test('fake inspectPod reports drift made by hand with the real driver wording', async () => {
  const dp = await nodeReady();
  await dp.addPod(spec());
  dp.deleteRule({ priority: 1536, from: '10.0.0.5/32', table: 2 });
  dp.deleteSnatElement('10.0.0.5');
  assert.deepEqual(await dp.inspectPod(spec()), [
    'rule from 10.0.0.5 lookup 2 missing',
    'snat element 10.0.0.5 missing',
  ]);
  dp.deletePodAddress('/var/run/netns/pod-a', 'eth0', '10.0.0.5');
  dp.setLinkDown('vpc0000000000a1');
  assert.deepEqual((await dp.inspectPod(spec())).slice(0, 6), [
    'address 10.0.0.5/32 missing on eth0',
    'route to 169.254.1.1 dev eth0 missing',
    'default route via 169.254.1.1 missing',
    'neighbour 169.254.1.1 missing',
    'host veth vpc0000000000a1 down',
    'host route to 10.0.0.5 dev vpc0000000000a1 missing',
  ]);
});

test('fake setupEni finds the link by MAC, is idempotent, and rejects an unknown MAC', async () => {
  const dp = new FakeDataplane();
  dp.addEniLink('ens6', '02:0E:0E:00:00:01');
  const eni = {
    mac: '02:0e:0e:00:00:01',
    deviceNumber: 1,
    primaryIp: '10.0.1.10',
    subnetCidr: '10.0.1.0/24',
    gateway: '10.0.1.1',
    routeTable: 2,
    mtu: 9001,
  };
  assert.equal(await dp.setupEni(eni), 'ens6');
  assert.equal(await dp.setupEni(eni), 'ens6');
  assert.deepEqual(dp.rules, [{ priority: 1536, from: '10.0.1.10/32', table: 2 }]);
  assert.equal(dp.eniLinks.get('02:0e:0e:00:00:01')?.up, true);
  await assert.rejects(dp.setupEni({ ...eni, mac: '02:0e:0e:00:00:99' }), /no link has MAC/);
  assert.deepEqual(await dp.listHostVeths(''), [], 'an ENI is not a host veth');
});

test('fake teardownEni undoes exactly what setupEni made, idempotently, and refuses the main table', async () => {
  const dp = new FakeDataplane();
  dp.addEniLink('ens6', '02:0e:0e:00:00:01');
  dp.addEniLink('ens7', '02:0e:0e:00:00:02');
  const eni = {
    mac: '02:0e:0e:00:00:01',
    deviceNumber: 1,
    primaryIp: '10.0.1.10',
    subnetCidr: '10.0.1.0/24',
    gateway: '10.0.1.1',
    routeTable: 2,
    mtu: 9001,
  };
  const other = { ...eni, mac: '02:0e:0e:00:00:02', deviceNumber: 2, primaryIp: '10.0.1.11', routeTable: 3 };
  await dp.setupEni(eni);
  await dp.setupEni(other);
  for (let i = 0; i < 2; i++) {
    await dp.teardownEni(eni);
    assert.deepEqual(dp.rules, [{ priority: 1536, from: '10.0.1.11/32', table: 3 }]);
    assert.deepEqual([...(dp.eniLinks.get(eni.mac)?.addresses ?? [])], []);
    assert.deepEqual([...(dp.eniLinks.get(eni.mac)?.routes.keys() ?? [])], []);
    assert.deepEqual(
      [...(dp.eniLinks.get(other.mac)?.routes.keys() ?? [])],
      [3],
      'another ENI keeps its table',
    );
  }
  await assert.rejects(dp.teardownEni({ ...eni, deviceNumber: 0, routeTable: 254 }), /refusing/);
});

test('fake repairs restore what drift took, and refuse what only addPod can rebuild', async () => {
  const dp = await nodeReady();
  await dp.addPod(spec());
  dp.deleteRule({ priority: 512, to: '10.0.0.5/32', table: 254 });
  dp.deletePodAddress('/var/run/netns/pod-a', 'eth0', '10.0.0.5');
  assert.deepEqual(await dp.repairHostSide(spec()), ['rule to 10.0.0.5 lookup main missing']);
  assert.equal((await dp.repairPodSide(spec())).length, 4);
  assert.deepEqual(await dp.inspectPod(spec()), []);
  const node = await dp.observeNode();
  assert.deepEqual(node.routes, [{ dst: '10.0.0.5', dev: 'vpc0000000000a1' }]);
  assert.deepEqual(node.snatElements, ['10.0.0.5']);
  dp.deleteLink('vpc0000000000a1');
  await assert.rejects(dp.repairHostSide(spec()), /host veth missing/);
  await assert.rejects(dp.repairPodSide(spec()), /pod interface missing/);
  dp.deleteNetns('/var/run/netns/pod-a');
  assert.deepEqual(await dp.observePodSide(spec()), {
    reachable: false,
    reason: 'No such file or directory',
  });
});
