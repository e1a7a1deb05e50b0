// The agent's reconcile passes (convergence): at start and on its interval they repair drift and
// collect what no attachment owns, and never take what a secondary ENI's own setup owns.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { agentConfigFromEnv } from '../config/agent-config.ts';
import { Dataplane } from '../dataplane/dataplane.ts';
import { FakeKernel } from '../dataplane/testing/fake-kernel.ts';
import { silentLogger } from '../infra/log.ts';
import { FakeCloud } from '../ipam/testing/fake-cloud.ts';
import { attachmentHostVeth } from '../plan/attachment.ts';
import { planRegularPod } from '../plan/pod-plan.ts';
import { noPodSource } from '../pods/watch/pod-source.ts';
import { startAgent } from './agent.ts';
import type { RunningAgent } from './agent-deps.ts';
import { agentEnv, agentWorlds, until } from './testing/agent-world.ts';
import { cniRequest, ipOf } from './testing/cni-request.ts';

const { world, tempDir } = agentWorlds();

test('at start the agent repairs drift and collects host veths no attachment owns (convergence)', async () => {
  const w = await world({ VPCNET_RECONCILE_SECONDS: '0' });
  let agent = await w.start();
  const ns = await w.netns('a');
  const ip = ipOf((await agent.cni(cniRequest('ADD', 'c1', ns))).stdout);
  const veth = attachmentHostVeth(agent.ledger.list()[0]!);
  await agent.stop();
  // While the agent is down: a route disappears, and a leftover veth with our prefix appears.
  w.kernel.deleteRoute('node', `${ip}/32`);
  const leftover = planRegularPod({
    key: { network: 'vpcnet', containerId: 'dead', ifName: 'eth0' },
    vethPrefix: 'vpc',
    ip: '10.9.9.9',
    eniId: 'eni-x',
    routeTable: 254,
    mtu: 9001,
    snat: false,
  });
  await w.dataplane.create(`${ns}-gone`, leftover);
  const leftoverVeth = w.kernel.veths().find((v) => v !== veth)!;
  agent = await w.start();
  try {
    assert.equal(w.kernel.hostRoute(ip), veth, 'the host route is back');
    assert.equal(w.kernel.veths().includes(leftoverVeth), false, 'the leftover veth was collected');
    assert.equal((await agent.cni(cniRequest('CHECK', 'c1', ns))).exitCode, 0);
  } finally {
    await agent.stop();
  }
});

test('the running agent repairs drift on its VPCNET_RECONCILE_SECONDS interval', async () => {
  const w = await world({ VPCNET_RECONCILE_SECONDS: '1' });
  const agent = await w.start();
  try {
    const ns = await w.netns('a');
    const ip = ipOf((await agent.cni(cniRequest('ADD', 'c1', ns))).stdout);
    w.kernel.deleteSnatElement(ip);
    await until(() => w.kernel.snatElements().includes(ip), 5000);
    assert.deepEqual(w.kernel.snatElements(), [ip]);
  } finally {
    await agent.stop();
  }
});

/** A cloud that can attach a second ENI, and a fake kernel that grows the ENI's link as the fabric does. */
interface EniNode {
  cloud: FakeCloud;
  dataplane: Dataplane;
  kernel: FakeKernel;
}

function eniAttachingNode(): EniNode {
  const cloud = new FakeCloud({ limits: { maxEnis: 2, ipsPerEni: 4 }, primarySecondaryIps: 3 });
  const kernel = new FakeKernel();
  const dataplane = new Dataplane(kernel);
  const setupEni = dataplane.setupEni.bind(dataplane);
  dataplane.setupEni = async (spec) => {
    const name = `ens${spec.deviceNumber + 5}`;
    if (!kernel.link(name)) kernel.addLink(name, spec.mac);
    return setupEni(spec);
  };
  return { cloud, dataplane, kernel };
}

/** An agent on that node with a reconcile pass every second and a fast pool loop. */
async function startOnNode(
  node: EniNode,
  extraEnv: Record<string, string>,
  now: () => number = Date.now,
): Promise<{ agent: RunningAgent; dir: string }> {
  const dir = await tempDir();
  const config = agentConfigFromEnv(agentEnv(dir, { VPCNET_RECONCILE_SECONDS: '1', ...extraEnv }));
  const agent = await startAgent({
    config,
    targets: config.targets,
    cloud: node.cloud,
    dataplane: node.dataplane,
    pods: noPodSource,
    log: silentLogger,
    now,
    poolIntervalMs: 20,
    // Its pod namespaces are files (w.netns).
    notANetworkNamespace: async () => undefined,
  });
  return { agent, dir };
}

test("reconcile passes never collect a secondary ENI's own rule at the pods' priority", async () => {
  const node = eniAttachingNode();
  const kernel = node.kernel;
  const { agent, dir } = await startOnNode(node, { WARM_IP_TARGET: '6' });
  try {
    const eniRule = () => kernel.ns().rules.find((r) => r.priority === 1536 && r.table !== 254);
    await until(() => eniRule() !== undefined, 5000);
    const rule = eniRule();
    assert.ok(rule, 'the pool manager attached a second ENI and set it up');
    // Wait for a pass that surely ran after the rule existed: it repairs a drift made now.
    const ns = join(dir, 'netns-a');
    await writeFile(ns, '');
    const ip = ipOf((await agent.cni(cniRequest('ADD', 'c1', ns))).stdout);
    kernel.deleteSnatElement(ip);
    await until(() => kernel.snatElements().includes(ip), 5000);
    assert.deepEqual(kernel.snatElements(), [ip], 'a reconcile pass ran');
    assert.ok(kernel.ns().rules.includes(rule), "the ENI's rule is still there");
  } finally {
    await agent.stop();
  }
});

test('an idle ENI is torn down before the cloud detaches it, and no reconcile pass collects its rule meanwhile', async () => {
  const node = eniAttachingNode();
  const { cloud, dataplane, kernel } = node;
  // A slow teardown: reconcile passes (every second) run while it is under way.
  const teardownEni = dataplane.teardownEni.bind(dataplane);
  const attachedAtTeardown: number[] = [];
  dataplane.teardownEni = async (spec) => {
    attachedAtTeardown.push(cloud.attached().length);
    await new Promise((r) => setTimeout(r, 1500));
    return teardownEni(spec);
  };
  // The agent's clock jumps a minute once the pods are gone: a freshly attached ENI is not freed
  // in its first minute.
  let skewMs = 0;
  const now = () => Date.now() + skewMs;
  const { agent, dir } = await startOnNode(node, { WARM_IP_TARGET: '1', IP_COOLDOWN_PERIOD: '0' }, now);
  try {
    const pods = ['a', 'b', 'c', 'd'];
    for (const p of pods) {
      const ns = join(dir, `netns-${p}`);
      await writeFile(ns, '');
      const out = await agent.cni(cniRequest('ADD', `c-${p}`, ns, `web-${p}`, `uid-${p}`));
      assert.equal(out.exitCode, 0, out.stdout);
    }
    const eni = cloud.attached()[1];
    assert.ok(eni, 'the fourth pod made the manager attach a second ENI');
    assert.ok(kernel.ns().rules.some((r) => r.from === `${eni.primaryIp}/32`));
    for (const p of pods) {
      const out = await agent.cni(
        cniRequest('DEL', `c-${p}`, join(dir, `netns-${p}`), `web-${p}`, `uid-${p}`),
      );
      assert.equal(out.exitCode, 0, out.stdout);
    }
    skewMs = 60_000;
    await until(() => !cloud.enis.has(eni.eniId), 8000);
    assert.equal(cloud.enis.has(eni.eniId), false, 'the idle ENI was detached and deleted');
    assert.deepEqual(attachedAtTeardown, [2], 'torn down once, while still attached');
    const ruleDels = kernel.ops.filter(
      (o) => o.op.op === 'ruleDel' && o.op.rule.from === `${eni.primaryIp}/32`,
    );
    assert.equal(ruleDels.length, 1, 'the ENI rule was removed once, by its teardown, never by reconcile GC');
    assert.equal(
      kernel.ns().rules.some((r) => r.from === `${eni.primaryIp}/32`),
      false,
    );
    assert.deepEqual(
      kernel.ns().routes.filter((r) => r.table !== 254),
      [],
    );
    assert.deepEqual(
      agent.pool.enis().map((e) => e.deviceNumber),
      [0],
    );
  } finally {
    await agent.stop();
  }
});
