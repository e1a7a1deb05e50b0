// The background GC of dead pods (upstream #3109) on the agent test world: a fake kernel, cloud and
// Kubernetes API, pod namespaces as files, and a monotonic clock the test moves by hand. Passes run
// when the test asks (the agent's own loop waits a grace / 5 first, longer than any test here).
import assert from 'node:assert/strict';
import { rename, rm, writeFile } from 'node:fs/promises';
import { test } from 'node:test';
import { FakePodPresence } from '../../pods/testing/fake-pod-presence.ts';
import { kernelState } from '../../reconcile/testing/comparable-state.ts';
import { agentWorlds } from '../testing/agent-world.ts';
import { cniRequest, ipOf } from '../testing/cni-request.ts';

const { world } = agentWorlds();
const GRACE_S = 300;
const GRACE = GRACE_S * 1000;
/** Quiet worlds: no reconcile loop, a known grace. */
const ENV = { VPCNET_RECONCILE_SECONDS: '0', VPCNET_DEAD_POD_GC_GRACE_SECONDS: String(GRACE_S) };

/** A world whose agent asks `api` about pods, on a clock at `clock.t` ms. */
async function gcWorld(env: Record<string, string> = {}) {
  const w = await world({ ...ENV, ...env });
  const api = new FakePodPresence();
  const clock = { t: 0 };
  const agent = await w.start({ podPresence: api, monotonicNow: () => clock.t });
  const gc = agent.deadPodGc;
  assert.ok(gc, 'the dead-pod GC runs when there is an API');
  /** ADD of pod `default/<pod>` (uid-<pod>) in a fresh namespace; the API knows the pod. */
  const addPod = async (pod: string, containerId = `c-${pod}`) => {
    const ns = await w.netns(`${pod}-${containerId}`);
    api.add('default', pod, `uid-${pod}`);
    const r = await agent.cni(cniRequest('ADD', containerId, ns, pod, `uid-${pod}`));
    assert.equal(r.exitCode, 0, r.stdout);
    return { ns, ip: ipOf(r.stdout), containerId };
  };
  /** The runtime loses the sandbox without a DEL: the namespace is gone, and its veth with it. */
  const loseNetns = async (ns: string) => {
    await rm(ns);
    w.kernel.deleteNetns(ns);
  };
  /** A pass at `t` ms on the monotonic clock. */
  const passAt = (t: number) => {
    clock.t = t;
    return gc.runOnce();
  };
  return { w, api, agent, gc, addPod, loseNetns, passAt };
}

test('pod gone from the API and namespace gone past the grace: collected exactly as its DEL would (ledger, kernel, cooldown)', async () => {
  const g = await gcWorld();
  const twin = await gcWorld();
  try {
    const a = await g.addPod('web-0');
    const b = await twin.addPod('web-0');
    assert.equal(a.ip, b.ip, 'both worlds gave the pod the same address');
    await g.loseNetns(a.ns);
    await twin.loseNetns(b.ns);
    g.api.delete('default', 'web-0');
    assert.equal((await g.passAt(0)).waiting, 1);
    const report = await g.passAt(GRACE);
    assert.deepEqual(report.collected, [
      {
        key: { network: 'vpcnet', containerId: a.containerId, ifName: 'eth0' },
        pod: { namespace: 'default', name: 'web-0', uid: 'uid-web-0' },
        ip: a.ip,
      },
    ]);
    // The twin's runtime sends the DEL the GC stood in for.
    assert.equal((await twin.agent.cni(cniRequest('DEL', b.containerId, b.ns))).exitCode, 0);
    assert.deepEqual(g.agent.ledger.list(), []);
    assert.equal(kernelState(g.w.kernel), kernelState(twin.w.kernel));
    assert.deepEqual(
      g.agent.ledger.coolingAddresses().map((c) => c.ip),
      [a.ip],
      'the address cools down before reuse',
    );
    assert.deepEqual(g.agent.pool.stats(Date.now()), twin.agent.pool.stats(Date.now()));
    assert.equal(g.gc.state().collected, 1);
    const next = await g.addPod('web-1');
    assert.notEqual(next.ip, a.ip, 'a cooling address is not handed out again');
  } finally {
    await g.agent.stop();
    await twin.agent.stop();
  }
});

test('a pod gone from the API whose namespace still exists is never collected in the background', async () => {
  const g = await gcWorld();
  try {
    const a = await g.addPod('web-0');
    g.api.delete('default', 'web-0');
    for (let k = 0; k <= 10; k++) assert.deepEqual((await g.passAt(k * GRACE)).collected, []);
    assert.equal(g.agent.ledger.list().length, 1);
    assert.equal(g.api.asked, 0, 'with its namespace there the API is not even asked');
    assert.equal(
      (await g.agent.cni(cniRequest('CHECK', a.containerId, a.ns, 'web-0', 'uid-web-0'))).exitCode,
      0,
    );
  } finally {
    await g.agent.stop();
  }
});

test('a namespace gone while the API still has the pod: the attachment is kept', async () => {
  const g = await gcWorld();
  try {
    const a = await g.addPod('web-0');
    await g.loseNetns(a.ns);
    for (let k = 0; k <= 10; k++) assert.deepEqual((await g.passAt(k * GRACE)).collected, []);
    assert.equal(g.agent.ledger.list().length, 1);
    assert.deepEqual(g.gc.state().waiting, []);
  } finally {
    await g.agent.stop();
  }
});

test('a pod seen absent for less than the grace is kept; at the grace it is collected', async () => {
  const g = await gcWorld();
  try {
    const a = await g.addPod('web-0');
    await g.loseNetns(a.ns);
    g.api.delete('default', 'web-0');
    await g.passAt(1000);
    assert.deepEqual((await g.passAt(1000 + GRACE - 1)).collected, []);
    assert.equal(g.agent.ledger.list().length, 1);
    assert.equal(g.gc.state().waiting[0]?.absentForMs, GRACE - 1);
    assert.equal((await g.passAt(1000 + GRACE)).collected.length, 1);
    assert.deepEqual(g.agent.ledger.list(), []);
  } finally {
    await g.agent.stop();
  }
});

test('a pod that reappears during the grace starts its observation again', async () => {
  const g = await gcWorld();
  try {
    const a = await g.addPod('web-0');
    await g.loseNetns(a.ns);
    g.api.delete('default', 'web-0');
    await g.passAt(0);
    g.api.add('default', 'web-0', 'uid-web-0');
    await g.passAt(100_000);
    g.api.delete('default', 'web-0');
    await g.passAt(150_000);
    assert.deepEqual((await g.passAt(GRACE)).collected, [], 'absent at 0 and at the grace, present between');
    assert.deepEqual((await g.passAt(150_000 + GRACE - 1)).collected, []);
    assert.equal((await g.passAt(150_000 + GRACE)).collected.length, 1);
  } finally {
    await g.agent.stop();
  }
});

test('a pod of that name with another UID is another pod: the attachment of the old one is collected', async () => {
  const g = await gcWorld();
  try {
    const a = await g.addPod('web-0');
    await g.loseNetns(a.ns);
    g.api.add('default', 'web-0', 'uid-of-the-new-web-0');
    await g.passAt(0);
    assert.equal((await g.passAt(GRACE)).collected.length, 1);
  } finally {
    await g.agent.stop();
  }
});

test('an unreachable API proves nothing: nothing is collected while it does not answer', async () => {
  const g = await gcWorld();
  try {
    const a = await g.addPod('web-0');
    await g.loseNetns(a.ns);
    g.api.delete('default', 'web-0');
    g.api.unreachable = true;
    for (let k = 0; k <= 5; k++) {
      const report = await g.passAt(k * GRACE);
      assert.deepEqual(report.collected, []);
      assert.match(report.apiError ?? '', /connection refused/);
    }
    assert.equal(g.agent.ledger.list().length, 1);
    assert.match(g.gc.state().lastApiError ?? '', /connection refused/);
    // Seen absent once; at the grace the API is down again: still nothing, until it answers.
    g.api.unreachable = false;
    await g.passAt(6 * GRACE);
    g.api.unreachable = true;
    assert.deepEqual((await g.passAt(7 * GRACE)).collected, []);
    g.api.unreachable = false;
    assert.equal((await g.passAt(7 * GRACE + 1)).collected.length, 1);
  } finally {
    await g.agent.stop();
  }
});

test('an ADD of the same key that lands while the GC waits on the API is not removed', async () => {
  const g = await gcWorld();
  try {
    const a = await g.addPod('web-0');
    await g.loseNetns(a.ns);
    g.api.delete('default', 'web-0');
    await g.passAt(0);
    const fresh = await g.w.netns('web-0-again');
    // The runtime DELs the lost sandbox and ADDs the same container ID in a new namespace, while
    // the GC's pass is between its look at the ledger and the pod's line.
    g.api.onAsk = async () => {
      g.api.onAsk = undefined;
      assert.equal((await g.agent.cni(cniRequest('DEL', a.containerId, a.ns))).exitCode, 0);
      const r = await g.agent.cni(cniRequest('ADD', a.containerId, fresh, 'web-0', 'uid-web-0'));
      assert.equal(r.exitCode, 0, r.stdout);
    };
    assert.deepEqual((await g.passAt(GRACE)).collected, []);
    const [att] = g.agent.ledger.list();
    assert.equal(att?.netns, fresh);
    const check = await g.agent.cni(cniRequest('CHECK', a.containerId, fresh, 'web-0', 'uid-web-0'));
    assert.equal(check.exitCode, 0, 'the new sandbox keeps its whole network');
  } finally {
    await g.agent.stop();
  }
});

test('a namespace path that another namespace took over counts as gone', async () => {
  const g = await gcWorld();
  try {
    const a = await g.addPod('web-0');
    g.w.kernel.deleteNetns(a.ns);
    await writeFile(`${a.ns}.next`, '');
    await rename(`${a.ns}.next`, a.ns);
    g.api.delete('default', 'web-0');
    await g.passAt(0);
    assert.equal((await g.passAt(GRACE)).collected.length, 1);
  } finally {
    await g.agent.stop();
  }
});

test('an attachment without a pod identity is never collected by this GC', async () => {
  const g = await gcWorld();
  try {
    const ns = await g.w.netns('bare');
    const req = cniRequest('ADD', 'c-bare', ns);
    const r = await g.agent.cni({ ...req, env: { ...req.env, CNI_ARGS: '' } });
    assert.equal(r.exitCode, 0, r.stdout);
    await g.loseNetns(ns);
    for (let k = 0; k <= 3; k++) assert.deepEqual((await g.passAt(k * GRACE)).collected, []);
    assert.equal(g.agent.ledger.list().length, 1);
    assert.equal(g.api.asked, 0);
  } finally {
    await g.agent.stop();
  }
});

test('VPCNET_DEAD_POD_GC=false, or no Kubernetes API, turns the GC off', async () => {
  const off = await world({ ...ENV, VPCNET_DEAD_POD_GC: 'false' });
  const offAgent = await off.start({ podPresence: new FakePodPresence() });
  const noApi = await world(ENV);
  const noApiAgent = await noApi.start();
  try {
    assert.equal(offAgent.deadPodGc, undefined);
    assert.equal(noApiAgent.deadPodGc, undefined);
  } finally {
    await offAgent.stop();
    await noApiAgent.stop();
  }
});
