// The agent end to end in-process: real ledger file, real pool and pool manager, with a fake cloud
// and a fake kernel. The property test drives random interleavings of ADD, stale DEL and agent
// restarts for sandboxes of the same pods and checks the ownership rule after every step.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import fc from 'fast-check';
import type { ForwardedRequest } from '../cni/wire.ts';
import { agentConfigFromEnv } from '../config/agent-config.ts';
import { Dataplane } from '../dataplane/dataplane.ts';
import { FakeKernel } from '../dataplane/testing/fake-kernel.ts';
import { silentLogger } from '../infra/log.ts';
import { FakeCloud } from '../ipam/testing/fake-cloud.ts';
import { attachmentHostVeth, attachmentIp } from '../plan/attachment.ts';
import { planRegularPod } from '../plan/pod-plan.ts';
import { noPodSource } from '../pods/pod-source.ts';
import { type RunningAgent, startAgent } from './agent.ts';

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

interface World {
  dir: string;
  cloud: FakeCloud;
  dataplane: Dataplane;
  kernel: FakeKernel;
  /** Files standing in for pod network namespaces (the agent checks CNI_NETNS exists). */
  netns(name: string): Promise<string>;
  start(): Promise<RunningAgent>;
}

async function world(extraEnv: Record<string, string> = {}): Promise<World> {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-agent-'));
  dirs.push(dir);
  const cloud = new FakeCloud({ limits: { maxEnis: 1, ipsPerEni: 12 }, primarySecondaryIps: 11 });
  const kernel = new FakeKernel();
  const dataplane = new Dataplane(kernel);
  const env = {
    VPCNET_AGENT_SOCKET: join(dir, 'agent.sock'),
    VPCNET_STATE_DIR: join(dir, 'state'),
    VPCNET_DEL_SPOOL_DIR: join(dir, 'state', 'del-spool'),
    VPCNET_NODE_NAME: 'node1',
    IP_COOLDOWN_PERIOD: '30',
    ...extraEnv,
  };
  const config = agentConfigFromEnv(env);
  return {
    dir,
    cloud,
    dataplane,
    kernel,
    async netns(name) {
      const p = join(dir, `netns-${name}`);
      await writeFile(p, '');
      return p;
    },
    start: () =>
      startAgent({
        config,
        targets: config.targets,
        cloud,
        dataplane,
        pods: noPodSource,
        log: silentLogger,
        now: Date.now,
        poolIntervalMs: 60_000,
      }),
  };
}

/** A spool file name as the plugin writes it (src/plugin/spool.ts): wall-clock ms first. */
function spoolName(ms: number): string {
  return `${String(ms).padStart(15, '0')}-${'1'.padStart(20, '0')}-1-abcd0123.del.json`;
}

const conf = JSON.stringify({ cniVersion: '1.0.0', name: 'vpcnet', type: 'vpcnet' });

function req(
  command: string,
  containerId: string,
  netns: string,
  pod = 'web-0',
  uid = 'uid-1',
): ForwardedRequest {
  return {
    env: {
      CNI_COMMAND: command,
      CNI_CONTAINERID: containerId,
      CNI_NETNS: netns,
      CNI_IFNAME: 'eth0',
      CNI_ARGS: `K8S_POD_NAMESPACE=default;K8S_POD_NAME=${pod};K8S_POD_UID=${uid}`,
    },
    stdin: conf,
  };
}

function ipOf(stdout: string): string {
  const r = JSON.parse(stdout) as { ips: { address: string }[] };
  return r.ips[0]!.address.split('/')[0]!;
}

test('ADD answers a 1.0.0 result and the attachment is on disk before the answer', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    const res = await agent.cni(req('ADD', 'c1', await w.netns('a')));
    assert.equal(res.exitCode, 0, res.stdout);
    const result = JSON.parse(res.stdout) as {
      cniVersion: string;
      ips: { address: string; gateway: string }[];
    };
    assert.equal(result.cniVersion, '1.0.0');
    assert.equal(result.ips[0]!.gateway, '169.254.1.1');
    const onDisk = JSON.parse(await readFile(join(w.dir, 'state', 'ledger.json'), 'utf8')) as {
      attachments: {
        resources: { kind: string; ip?: string }[];
        key: { containerId: string };
        phase?: string;
        netnsId?: string;
      }[];
    };
    assert.equal(onDisk.attachments.length, 1);
    assert.equal(onDisk.attachments[0]!.resources.find((r) => r.kind === 'vpcAddress')?.ip, ipOf(res.stdout));
    assert.equal(onDisk.attachments[0]!.phase, undefined);
    // The namespace is recorded by identity too, so a reused path is never mistaken for it.
    assert.match(onDisk.attachments[0]!.netnsId ?? '', /^\d+:\d+$/);
  } finally {
    await agent.stop();
  }
});

test('stale DEL for a replaced sandbox keeps the new sandbox network', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    const oldNs = await w.netns('old');
    const newNs = await w.netns('new');
    const a = await agent.cni(req('ADD', 'a279', oldNs));
    const b = await agent.cni(req('ADD', '30c8', newNs));
    assert.notEqual(ipOf(a.stdout), ipOf(b.stdout));
    const newVeth = attachmentHostVeth(agent.ledger.list().find((x) => x.key.containerId === '30c8')!);
    assert.equal((await agent.cni(req('DEL', 'a279', oldNs))).exitCode, 0);
    assert.ok(w.kernel.veths().includes(newVeth), 'the stale DEL removed the new sandbox veth');
    assert.deepEqual(w.kernel.snatElements(), [ipOf(b.stdout)]);
    assert.equal((await agent.cni(req('CHECK', '30c8', newNs))).exitCode, 0);
  } finally {
    await agent.stop();
  }
});

test('a failed ADD leaves no ledger record, no kernel state and no lost address', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    const before = agent.pool.stats(Date.now());
    w.kernel.failNext(
      (op) => op.op === 'ruleAdd' && op.rule.priority === 512,
      'RTNETLINK answers: File exists',
    );
    const res = await agent.cni(req('ADD', 'c1', await w.netns('a')));
    assert.equal(res.exitCode, 1);
    assert.match(JSON.parse(res.stdout).msg as string, /File exists/);
    assert.equal(agent.ledger.list().length, 0);
    assert.deepEqual(w.kernel.podResidue(), []);
    const afterStats = agent.pool.stats(Date.now());
    assert.equal(afterStats.assigned, before.assigned);
    assert.equal(afterStats.total, before.total);
  } finally {
    await agent.stop();
  }
});

test('DEL of an unknown attachment, and a repeated DEL, succeed', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    assert.equal((await agent.cni(req('DEL', 'never-added', ''))).exitCode, 0);
    const ns = await w.netns('a');
    await agent.cni(req('ADD', 'c1', ns));
    assert.equal((await agent.cni(req('DEL', 'c1', ns))).exitCode, 0);
    assert.equal((await agent.cni(req('DEL', 'c1', ''))).exitCode, 0);
    assert.deepEqual(w.kernel.podResidue(), []);
  } finally {
    await agent.stop();
  }
});

test('the cooldown of a freed address survives an agent restart', async () => {
  const w = await world({ IP_COOLDOWN_PERIOD: '3600' });
  let agent = await w.start();
  const ns = await w.netns('a');
  const first = ipOf((await agent.cni(req('ADD', 'c1', ns))).stdout);
  await agent.cni(req('DEL', 'c1', ns));
  await agent.stop();
  agent = await w.start();
  try {
    assert.equal(agent.pool.state(first)?.kind, 'cooling');
    const seen = new Set<string>();
    for (let i = 0; i < 10; i++) {
      const out = await agent.cni(req('ADD', `n${i}`, await w.netns(`n${i}`), `p${i}`, `u${i}`));
      if (out.exitCode === 0) seen.add(ipOf(out.stdout));
    }
    assert.ok(!seen.has(first), 'a cooling address was handed out after the restart');
  } finally {
    await agent.stop();
  }
});

test('a half-done ADD found at start is removed: its kernel state and its record', async () => {
  const w = await world();
  let agent = await w.start();
  const ns = await w.netns('a');
  await agent.cni(req('ADD', 'c1', ns));
  const att = agent.ledger.list()[0]!;
  // Simulate a crash between the kernel changes and the final ledger write.
  agent.ledger.put({ ...att, phase: 'adding' });
  await agent.ledger.commit();
  await agent.stop();
  agent = await w.start();
  try {
    assert.equal(agent.ledger.list().length, 0);
    assert.deepEqual(w.kernel.podResidue(), []);
    assert.equal(agent.pool.state(attachmentIp(att) ?? '')?.kind !== 'assigned', true);
  } finally {
    await agent.stop();
  }
});

test('DELs spooled while the agent was down are applied before it serves', async () => {
  const w = await world();
  let agent = await w.start();
  const ns = await w.netns('a');
  await agent.cni(req('ADD', 'c1', ns));
  await agent.stop();
  const spool = join(w.dir, 'state', 'del-spool');
  const { mkdir } = await import('node:fs/promises');
  await mkdir(spool, { recursive: true });
  await writeFile(join(spool, spoolName(Date.now())), JSON.stringify(req('DEL', 'c1', ns)));
  agent = await w.start();
  try {
    assert.equal(agent.ledger.list().length, 0);
    assert.deepEqual(w.kernel.podResidue(), []);
  } finally {
    await agent.stop();
  }
});

test('a spooled DEL older than the attachment holding its key (a reused container ID) leaves that attachment alone', async () => {
  const w = await world();
  const ns = await w.netns('a');
  let agent = await w.start();
  const ip = ipOf((await agent.cni(req('ADD', 'c1', ns))).stdout);
  await agent.stop();
  const { mkdir, readdir } = await import('node:fs/promises');
  const spool = join(w.dir, 'state', 'del-spool');
  await mkdir(spool, { recursive: true });
  // Spooled for an earlier attachment with this key, a minute before the current one was created.
  await writeFile(join(spool, spoolName(Date.now() - 60_000)), JSON.stringify(req('DEL', 'c1', ns)));
  agent = await w.start();
  try {
    const current = agent.ledger.list()[0];
    assert.equal(
      current && attachmentIp(current),
      ip,
      'the stale spooled DEL removed the current attachment',
    );
    assert.deepEqual(await readdir(spool), [], 'the stale DEL was kept instead of dropped');
  } finally {
    await agent.stop();
  }
});

test('a DEL spooled while the agent runs is applied without a restart', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    const ns = await w.netns('a');
    await agent.cni(req('ADD', 'c1', ns));
    const { mkdir } = await import('node:fs/promises');
    const spool = join(w.dir, 'state', 'del-spool');
    await mkdir(spool, { recursive: true });
    await writeFile(join(spool, spoolName(Date.now())), JSON.stringify(req('DEL', 'c1', ns)));
    await until(() => agent.ledger.list().length === 0, 15_000);
    assert.equal(agent.ledger.list().length, 0, 'the spooled DEL was not applied while the agent ran');
  } finally {
    await agent.stop();
  }
});

test('ownership holds under random ADD / stale DEL / restart interleavings, also when operations overlap', async () => {
  const cniOp = fc.record({
    op: fc.constantFrom('add' as const, 'del' as const),
    pod: fc.integer({ min: 0, max: 2 }),
    sandbox: fc.integer({ min: 0, max: 2 }),
  });
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.oneof(
          { weight: 4, arbitrary: cniOp },
          // Several runtimes' requests in flight at once (the agent serializes per pod only).
          {
            weight: 2,
            arbitrary: fc.record({
              op: fc.constant('burst' as const),
              ops: fc.array(cniOp, { minLength: 2, maxLength: 6 }),
            }),
          },
          { weight: 1, arbitrary: fc.record({ op: fc.constant('restart' as const) }) },
        ),
        { minLength: 1, maxLength: 40 },
      ),
      async (ops) => {
        // 9 sandboxes at most, 11 addresses: with no cooldown an ADD never has to wait for one
        // (and if it had to, it would fail within a second instead of stalling the property).
        const w = await world({ IP_COOLDOWN_PERIOD: '0', VPCNET_ADD_WAIT_SECONDS: '1' });
        let agent = await w.start();
        const run = async (o: { op: 'add' | 'del'; pod: number; sandbox: number }) => {
          const cid = `p${o.pod}s${o.sandbox}`;
          const ns = await w.netns(cid);
          return agent.cni(req(o.op === 'add' ? 'ADD' : 'DEL', cid, ns, `pod${o.pod}`, `uid${o.pod}`));
        };
        try {
          for (const o of ops) {
            if (o.op === 'restart') {
              await agent.stop();
              agent = await w.start();
            } else {
              const batch = o.op === 'burst' ? o.ops : [o];
              const outs = await Promise.all(batch.map(run));
              for (const [i, out] of outs.entries())
                assert.equal(out.exitCode, 0, `${JSON.stringify(batch[i])}: ${out.stdout}`);
            }
            // Invariant: the kernel holds exactly what live attachments own, each address has one owner.
            const live = agent.ledger.list();
            assert.ok(
              live.every((a) => a.phase === undefined),
              'an ADD that answered left its record half-done',
            );
            const ips = live.map((a) => attachmentIp(a) ?? '');
            assert.equal(new Set(ips).size, ips.length, 'an address has two owners');
            const owned = new Set(live.map(attachmentHostVeth));
            assert.deepEqual(w.kernel.veths().sort(), [...owned].sort());
            assert.deepEqual(w.kernel.snatElements(), [...ips].sort());
            for (const ip of ips) assert.equal(agent.pool.state(ip)?.kind, 'assigned');
            // And the other way round: every address the pool calls assigned has a live owner.
            const assigned = agent.pool
              .enis()
              .flatMap((e) => [...agent.pool.addresses(e.eniId)].filter(([, st]) => st.kind === 'assigned'))
              .map(([ip]) => ip);
            assert.deepEqual(assigned.sort(), [...ips].sort(), 'an assigned address has no attachment');
          }
        } finally {
          await agent.stop();
        }
      },
    ),
    { numRuns: 100 },
  );
});

test('at start the agent repairs drift and collects host veths no attachment owns (convergence)', async () => {
  const w = await world({ VPCNET_RECONCILE_SECONDS: '0' });
  let agent = await w.start();
  const ns = await w.netns('a');
  const ip = ipOf((await agent.cni(req('ADD', 'c1', ns))).stdout);
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
    assert.equal((await agent.cni(req('CHECK', 'c1', ns))).exitCode, 0);
  } finally {
    await agent.stop();
  }
});

test('the running agent repairs drift on its VPCNET_RECONCILE_SECONDS interval', async () => {
  const w = await world({ VPCNET_RECONCILE_SECONDS: '1' });
  const agent = await w.start();
  try {
    const ns = await w.netns('a');
    const ip = ipOf((await agent.cni(req('ADD', 'c1', ns))).stdout);
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
): Promise<{ agent: RunningAgent; dir: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-agent-'));
  dirs.push(dir);
  const env = {
    VPCNET_AGENT_SOCKET: join(dir, 'agent.sock'),
    VPCNET_STATE_DIR: join(dir, 'state'),
    VPCNET_DEL_SPOOL_DIR: join(dir, 'state', 'del-spool'),
    VPCNET_NODE_NAME: 'node1',
    VPCNET_RECONCILE_SECONDS: '1',
    ...extraEnv,
  };
  const config = agentConfigFromEnv(env);
  const agent = await startAgent({
    config,
    targets: config.targets,
    cloud: node.cloud,
    dataplane: node.dataplane,
    pods: noPodSource,
    log: silentLogger,
    now: Date.now,
    poolIntervalMs: 20,
  });
  return { agent, dir };
}

async function until(done: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
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
    const ip = ipOf((await agent.cni(req('ADD', 'c1', ns))).stdout);
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
  const { agent, dir } = await startOnNode(node, { WARM_IP_TARGET: '1', IP_COOLDOWN_PERIOD: '0' });
  try {
    const pods = ['a', 'b', 'c', 'd'];
    for (const p of pods) {
      const ns = join(dir, `netns-${p}`);
      await writeFile(ns, '');
      const out = await agent.cni(req('ADD', `c-${p}`, ns, `web-${p}`, `uid-${p}`));
      assert.equal(out.exitCode, 0, out.stdout);
    }
    const eni = cloud.attached()[1];
    assert.ok(eni, 'the fourth pod made the manager attach a second ENI');
    assert.ok(kernel.ns().rules.some((r) => r.from === `${eni.primaryIp}/32`));
    for (const p of pods) {
      const out = await agent.cni(req('DEL', `c-${p}`, join(dir, `netns-${p}`), `web-${p}`, `uid-${p}`));
      assert.equal(out.exitCode, 0, out.stdout);
    }
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

test('CNI GC removes exactly the attachments of this network the runtime no longer lists; STATUS answers ready', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    const keep = await w.netns('keep');
    const gone = await w.netns('gone');
    await agent.cni(req('ADD', 'keep1', keep, 'keep', 'u-keep'));
    await agent.cni(req('ADD', 'gone1', gone, 'gone', 'u-gone'));
    const keepVeth = attachmentHostVeth(agent.ledger.list().find((a) => a.key.containerId === 'keep1')!);
    const gc = await agent.cni({
      env: { CNI_COMMAND: 'GC' },
      stdin: JSON.stringify({
        cniVersion: '1.1.0',
        name: 'vpcnet',
        type: 'vpcnet',
        'cni.dev/valid-attachments': [{ containerID: 'keep1', ifname: 'eth0' }],
      }),
    });
    assert.equal(gc.exitCode, 0, gc.stdout);
    assert.deepEqual(
      agent.ledger.list().map((a) => a.key.containerId),
      ['keep1'],
    );
    assert.deepEqual(w.kernel.veths(), [keepVeth]);
    const other = await agent.cni({
      env: { CNI_COMMAND: 'GC' },
      stdin: JSON.stringify({
        cniVersion: '1.1.0',
        name: 'othernet',
        type: 'vpcnet',
        'cni.dev/valid-attachments': [],
      }),
    });
    assert.equal(other.exitCode, 0);
    assert.equal(agent.ledger.list().length, 1, 'GC of another network touched this one');
    const status = await agent.cni({
      env: { CNI_COMMAND: 'STATUS' },
      stdin: JSON.stringify({ cniVersion: '1.1.0', name: 'vpcnet', type: 'vpcnet' }),
    });
    assert.deepEqual(status, { exitCode: 0, stdout: '' });
  } finally {
    await agent.stop();
  }
});
