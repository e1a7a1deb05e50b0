// A node that says when it cannot serve, in labs whose subnet runs out (docs/design.md,
// "Capacity"). Three nodes with VPCNET_NODE_READINESS=taint; other tenants take every free address
// of the subnet; 100 pods go through a scheduler stand-in that binds each to the untainted node with
// the fewest pods (as kube-scheduler's spreading does), and a kubelet stand-in that runs the
// installed plugin and retries a failed sandbox every second. Each node serves what its pool
// holds, then taints itself as its last address goes; the rest wait Pending instead of in
// ContainerCreating; when the tenants leave, the pools grow, the taints go and every pod runs.
// A one-node lab in the default condition mode says the same through its condition and writes no
// taint (the emulator's API log shows every write). The subnet census runs in both: in the
// three-node lab one agent reads the subnet from EC2 and the others read its Lease.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { labLayout, NODE_SUBNET } from '../../src/lab/layout.ts';
import { unixJson } from '../../src/lab/unix-http.ts';
import {
  addPod,
  agentState,
  ctlAnyExit,
  deletePodNetns,
  type LabDesc,
  type LabNodeDesc,
  labDown,
  labUp,
  newPod,
  registerPod,
  type TestPod,
  uniqueLabName,
  waitFor,
} from '../lab-fixture.ts';

const TAINT = 'vpcnet.io/ip-exhausted';
const CONDITION = 'vpcnet.io/NetworkReady';

interface NodeObject {
  readonly spec?: { readonly taints?: readonly { readonly key: string }[] };
  readonly status?: { readonly conditions?: readonly { type: string; status: string; reason?: string }[] };
}

async function nodeObject(lab: string, node: string): Promise<NodeObject> {
  return (await unixJson(
    labLayout(lab, 0).emulator.adminSocket,
    'GET',
    `/api/v1/nodes/${node}`,
  )) as NodeObject;
}

const tainted = (n: NodeObject) => (n.spec?.taints ?? []).some((t) => t.key === TAINT);
const condition = (n: NodeObject) => n.status?.conditions?.find((c) => c.type === CONDITION);

async function admin(
  lab: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<Record<string, unknown>> {
  return (await unixJson(labLayout(lab, 0).emulator.adminSocket, method, path, body)) as Record<
    string,
    unknown
  >;
}

/** Other tenants take every address of the node subnet still free. */
async function exhaustSubnet(lab: string): Promise<number> {
  const capacity = await admin(lab, 'GET', `/admin/subnets/${NODE_SUBNET.subnetId}/capacity`);
  const free = Number(capacity.available);
  await admin(lab, 'POST', `/admin/subnets/${NODE_SUBNET.subnetId}/tenants`, {
    addresses: free,
    perEni: 200,
    label: 'fill',
  });
  return free;
}

/** What a watcher saw of one node, in ms since the watch began. */
interface NodeTimeline {
  emptyAndBlockedAt?: number;
  taintedAt?: number;
  untaintedAt?: number;
  reasons: Set<string>;
}

/** Polls every node's pool (the agent's state) and its taint (the API) every 100 ms. */
function watchNodes(lab: string, nodes: readonly LabNodeDesc[], t0: number) {
  const timelines = new Map(nodes.map((n) => [n.name, { reasons: new Set<string>() } as NodeTimeline]));
  let stopped = false;
  const done = (async () => {
    while (!stopped) {
      for (const n of nodes) {
        const tl = timelines.get(n.name)!;
        const [state, obj] = await Promise.all([
          agentState(n).catch(() => undefined),
          nodeObject(lab, n.name),
        ]);
        const now = performance.now() - t0;
        if (state !== undefined && state.pool.stats.available === 0 && state.pool.growth.blocked !== null)
          tl.emptyAndBlockedAt ??= now;
        const reason = condition(obj)?.reason;
        if (reason !== undefined) tl.reasons.add(reason);
        if (tainted(obj)) tl.taintedAt ??= now;
        else if (tl.taintedAt !== undefined) tl.untaintedAt ??= now;
      }
      await sleep(100);
    }
  })();
  return {
    timelines,
    async stop() {
      stopped = true;
      await done;
    },
  };
}

describe('three nodes whose subnet runs out, VPCNET_NODE_READINESS=taint', () => {
  const name = uniqueLabName('vpccap');
  let lab: LabDesc;
  const pods: TestPod[] = [];

  let labStartedAt = 0;

  before(async () => {
    await labDown(name);
    labStartedAt = Date.now();
    lab = await labUp(name, [
      '--nodes',
      '3',
      '--instance-type',
      'm5.xlarge',
      '--agent-env',
      'VPCNET_NODE_READINESS=taint',
      // Capacity that returns is seen within 2 s (the pool's longest wait after a failed pass).
      '--agent-env',
      'VPCNET_POOL_RETRY_MAX_SECONDS=2',
      '--agent-env',
      'VPCNET_ADD_WAIT_SECONDS=5',
    ]);
  });
  after(async () => {
    await deletePodNetns(pods);
    await labDown(name);
  });

  test('100 pods: none waits over 10 s in ContainerCreating; taints come within 5 s of an empty blocked pool and go within 5 s of capacity returning', async () => {
    for (const n of lab.nodes) {
      await waitFor(`${n.name} serving with a warm pool and its condition True`, async () => {
        const [s, obj] = await Promise.all([agentState(n), nodeObject(name, n.name)]);
        return s.pool.stats.available >= 14 && condition(obj)?.status === 'True' ? true : undefined;
      });
    }
    const taken = await exhaustSubnet(name);
    assert.ok(taken > 3000, `${taken} addresses taken by tenants`);
    const t0 = performance.now();
    const watch = watchNodes(name, lab.nodes, t0);
    const creating: { pod: string; node: string; ms: number }[] = [];
    const boundTo = new Map<string, number>(lab.nodes.map((n) => [n.name, 0]));
    let capacityReturnedAt: number | undefined;
    try {
      for (let i = 0; i < 100; i++) {
        // The scheduler stand-in: the untainted node with the fewest pods; none: the pod stays Pending.
        let node: LabNodeDesc | undefined;
        for (;;) {
          const free = [];
          for (const n of lab.nodes) if (!tainted(await nodeObject(name, n.name))) free.push(n);
          node = free.sort((a, b) => boundTo.get(a.name)! - boundTo.get(b.name)!)[0];
          if (node !== undefined) break;
          // Every node says it cannot serve: the tenants leave (once), and the pods wait Pending.
          if (capacityReturnedAt === undefined) {
            await admin(name, 'DELETE', `/admin/subnets/${NODE_SUBNET.subnetId}/tenants`, { label: 'fill' });
            capacityReturnedAt = performance.now() - t0;
          }
          await sleep(100);
        }
        boundTo.set(node.name, boundTo.get(node.name)! + 1);
        const pod = await newPod(name, `c${i}`);
        pods.push(pod);
        await registerPod(name, node.name, pod.namespace, pod.name, `uid-c${i}`);
        // The kubelet stand-in: the sandbox is set up, and tried again a second after a failure.
        const bound = performance.now();
        for (;;) {
          try {
            await addPod(node, pod);
            break;
          } catch {
            assert.ok(
              performance.now() - bound < 60_000,
              `pod ${pod.name} on ${node.name} never got an address`,
            );
            await sleep(1000);
          }
        }
        creating.push({ pod: pod.name, node: node.name, ms: performance.now() - bound });
      }
      // The pods may all be placed on the first nodes to untaint: keep watching the others for
      // the whole 5 s they are allowed, so a late untaint is measured and not missed.
      if (capacityReturnedAt !== undefined) {
        const deadline = capacityReturnedAt + 6000;
        while (
          performance.now() - t0 < deadline &&
          [...watch.timelines.values()].some(
            (tl) => tl.taintedAt !== undefined && tl.untaintedAt === undefined,
          )
        )
          await sleep(100);
      }
    } finally {
      await watch.stop();
    }
    const slow = creating.filter((c) => c.ms > 10_000);
    assert.deepEqual(slow, [], 'pods that waited over 10 s in ContainerCreating');
    assert.ok(capacityReturnedAt !== undefined, 'every node tainted itself before the tenants left');
    const report: string[] = [];
    for (const [node, tl] of watch.timelines) {
      assert.ok(
        tl.emptyAndBlockedAt !== undefined && tl.taintedAt !== undefined,
        `${node} emptied and was tainted`,
      );
      assert.ok(
        tl.reasons.has('PoolEmpty:SubnetExhausted'),
        `${node}'s condition said why: ${[...tl.reasons].join()}`,
      );
      const on = tl.taintedAt - tl.emptyAndBlockedAt;
      assert.ok(on <= 5000, `${node} tainted ${on} ms after its pool emptied with growth blocked`);
      assert.ok(tl.untaintedAt !== undefined, `${node} untainted`);
      const off = tl.untaintedAt - capacityReturnedAt;
      assert.ok(off <= 5000, `${node} untainted ${off} ms after capacity returned`);
      report.push(
        `${node}: taint ${Math.max(0, on).toFixed(0)} ms after empty+blocked, off ${off.toFixed(0)} ms after capacity returned`,
      );
    }
    const worst = Math.max(...creating.map((c) => c.ms));
    process.stderr.write(`${report.join('\n')}\nlongest ContainerCreating: ${worst.toFixed(0)} ms\n`);
    for (const n of lab.nodes) {
      const obj = await nodeObject(name, n.name);
      assert.equal(condition(obj)?.status, 'True');
      assert.equal(tainted(obj), false);
    }
  });
  test('the census: one agent reads the subnet from EC2 and publishes it on the Lease, the others read it there, vpcnetctl status shows it', async () => {
    const subnetId = NODE_SUBNET.subnetId;
    type Census = { role: string; subnets: { subnetId: string; takenAt: string; freePrefixes: number }[] };
    const censusOf = async (n: LabNodeDesc) =>
      ((await agentState(n)) as unknown as { census?: Census }).census;
    // A follower reads the Lease every 15 s (±20 %) until it has the census of its subnet (then
    // every 60 s): one that looked before the leader published sees it at its next round.
    const all = await waitFor(
      'every agent to know the census of the node subnet',
      async () => {
        const cs = await Promise.all(lab.nodes.map(censusOf));
        const rows = cs.map((c) => c?.subnets.find((r) => r.subnetId === subnetId));
        return rows.every((r) => r !== undefined) ? { cs, rows } : undefined;
      },
      90_000,
    );
    assert.deepEqual(all.cs.map((c) => c?.role).sort(), ['follower', 'follower', 'leader']);
    const leader = lab.nodes[all.cs.findIndex((c) => c?.role === 'leader')]!;
    const lease = await admin(
      name,
      'GET',
      '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/vpcnet-subnet-census',
    );
    const spec = lease.spec as { holderIdentity?: string };
    const annotations = (lease.metadata as { annotations?: Record<string, string> }).annotations ?? {};
    assert.equal(spec.holderIdentity, leader.name);
    assert.match(annotations['vpcnet.io/subnet-census'] ?? '', new RegExp(subnetId));
    // Only the leader read the subnet from EC2: one DescribeNetworkInterfaces of it per 5 minutes.
    const describes = (await readFile(labLayout(name, 1).files.emulatorLog, 'utf8'))
      .split('\n')
      .filter((l) => l.includes('"DescribeNetworkInterfaces"') && l.includes(`"subnetId":"${subnetId}"`));
    const minutes = (Date.now() - labStartedAt) / 60_000;
    assert.ok(
      describes.length >= 1 && describes.length <= 1 + Math.floor(minutes / 5),
      `${describes.length} reads of the subnet in ${minutes.toFixed(1)} minutes`,
    );
    const status = await ctlAnyExit(['status', '--json', '--lab', name, '--node', '2']);
    const shown = (JSON.parse(status.stdout) as { node?: { census?: Census } }).node?.census?.subnets.find(
      (r) => r.subnetId === subnetId,
    );
    assert.equal(
      shown?.freePrefixes,
      all.rows[1]?.freePrefixes,
      'vpcnetctl status shows what the agent knows',
    );
  });
});

describe('one node whose subnet runs out, in the default condition mode', () => {
  const name = uniqueLabName('vpccon');
  let lab: LabDesc;
  const pods: TestPod[] = [];

  before(async () => {
    await labDown(name);
    lab = await labUp(name, ['--instance-type', 't3.medium', '--agent-env', 'VPCNET_ADD_WAIT_SECONDS=2']);
  });
  after(async () => {
    await deletePodNetns(pods);
    await labDown(name);
  });

  test('the condition turns False with PoolEmpty:SubnetExhausted and the agent writes no taint', async () => {
    const node = lab.nodes[0]!;
    await waitFor('the pool warm and the condition True', async () => {
      const [s, obj] = await Promise.all([agentState(node), nodeObject(name, node.name)]);
      return s.pool.stats.available >= 5 && condition(obj)?.status === 'True' ? true : undefined;
    });
    const log = labLayout(name, 1).files.emulatorLog;
    const logAt = (await readFile(log, 'utf8')).length;
    await exhaustSubnet(name);
    let refused = 0;
    for (let i = 0; i < 8 && refused === 0; i++) {
      const pod = await newPod(name, `k${i}`);
      pods.push(pod);
      await addPod(node, pod).catch(() => refused++);
    }
    assert.equal(refused, 1, 'the pool ran out');
    const said = await waitFor('the condition False', async () => {
      const c = condition(await nodeObject(name, node.name));
      return c?.status === 'False' ? c : undefined;
    });
    assert.equal(said.reason, 'PoolEmpty:SubnetExhausted');
    await sleep(3000); // longer than taint mode's confirmation, had it been on
    const writes = (await readFile(log, 'utf8'))
      .slice(logAt)
      .split('\n')
      .filter((l) => l.includes('"msg":"kube"') && l.includes(`/nodes/${node.name}`));
    const taintWrites = writes.filter((l) => l.includes('spec.taints'));
    assert.deepEqual(taintWrites, [], 'no write of the node changed its taints');
    assert.ok(
      writes.some((l) => l.includes('/status') && l.includes('status.conditions')),
      'the condition was written, and the log shows node writes',
    );
    assert.equal(tainted(await nodeObject(name, node.name)), false);
  });
});
