// A private containerd 1.6, driven over the CRI runtime.v1 API as kubelet drives it, calls the
// installed plugin from inside a lab node's network namespace. containerd sends ADD on
// RunPodSandbox (loopback and our conflist at once), DEL on StopPodSandbox, and a second DEL
// with an empty CNI_NETNS and no prevResult on RemovePodSandbox; never CHECK or VERSION.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  agentState,
  hostLinks,
  type LabDesc,
  type LabNodeDesc,
  labDown,
  labUp,
  registerPod,
  registerSgPod,
  uniqueLabName,
  waitCooling,
  waitForTrunk,
} from '../lab-fixture.ts';
import { gate, runClient } from './clients.ts';
import {
  criProtoPath,
  type PrivateContainerd,
  pauseImagePath,
  prepareContainerdDir,
  removeContainerdDir,
  startContainerd,
} from './containerd-daemon.ts';
import { type PodSandboxMetadata, sandboxNetnsPath } from './cri.ts';

const containerdGate = await gate('containerd', [
  { program: 'containerd' },
  { program: 'containerd-shim-runc-v2' },
  { program: 'runc' },
  { program: 'ctr' },
  { file: criProtoPath },
  { file: pauseImagePath },
  { file: '/usr/lib/cni/loopback' },
]);

async function pingsFrom(netnsPath: string, ip: string): Promise<boolean> {
  const out = await runClient(['nsenter', `--net=${netnsPath}`, 'ping', '-c', '1', '-W', '2', ip]);
  return out.code === 0;
}

/** A lab (with `labArgs`) and a private containerd in its first node's namespace, for one describe block. */
function containerdInLab(prefix: string, labArgs: string[] = []) {
  const labName = uniqueLabName(prefix);
  const env = {
    labName,
    lab: undefined as unknown as LabDesc,
    node: undefined as unknown as LabNodeDesc,
    containerd: undefined as unknown as PrivateContainerd,
  };
  let dir: string | undefined;
  let started: PrivateContainerd | undefined;
  before(async () => {
    containerdGate.assertPresent();
    await labDown(labName);
    dir = await prepareContainerdDir(labName); // before `lab up`: see containerd-daemon.ts
    env.lab = await labUp(labName, labArgs);
    env.node = env.lab.nodes[0]!;
    started = await startContainerd(dir, env.node);
    env.containerd = started;
  });
  after(async () => {
    if (started) await started.stop();
    else if (dir) await removeContainerdDir(dir);
    await labDown(labName);
  });
  return env;
}

/** Runs a sandbox and returns its id, VPC address and netns path, checked against the agent's ledger. */
async function runSandbox(
  env: ReturnType<typeof containerdInLab>,
  meta: PodSandboxMetadata,
): Promise<{ id: string; ip: string; netns: string }> {
  const cri = env.containerd.cri;
  const id = await cri.runPodSandbox(meta);
  const status = await cri.podSandboxStatus(id);
  assert.equal(status.status.state, 'SANDBOX_READY');
  const ip = status.status.network?.ip ?? '';
  assert.match(ip, /^10\.0\./, `sandbox address "${ip}" is not in the VPC`);
  const att = (await agentState(env.node)).attachments.find((a) => a.key.containerId === id);
  assert.ok(att, `sandbox ${id} has no attachment in the agent's ledger`);
  assert.equal(att.ip, ip, 'containerd reports a different address than the ledger');
  return { id, ip, netns: sandboxNetnsPath(status) };
}

describe('containerd 1.6 CRI in a lab node namespace', { skip: containerdGate.skip }, () => {
  const env = containerdInLab('vpcrc');

  async function registeredPod(name: string, attempt = 0): Promise<PodSandboxMetadata> {
    const uid = `uid-${env.labName}-${name}`;
    await registerPod(env.labName, env.node.name, 'default', name, uid);
    return { name, uid, namespace: 'default', attempt };
  }

  async function stopAndRemove(id: string): Promise<void> {
    await env.containerd.cri.stopPodSandbox(id);
    // The second DEL (empty CNI_NETNS, no prevResult) must succeed or this rejects.
    await env.containerd.cri.removePodSandbox(id);
  }

  test('RunPodSandbox gives the sandbox a VPC address that reaches the VPC host; Stop+Remove release it', async () => {
    const meta = await registeredPod('web');
    const sb = await runSandbox(env, meta);
    assert.ok(
      await pingsFrom(sb.netns, env.lab.vpcHosts[0]!.ip),
      `sandbox ${sb.ip} cannot reach the VPC host`,
    );
    const att = (await agentState(env.node)).attachments.find((a) => a.key.containerId === sb.id)!;
    const withPod = att as typeof att & { pod?: { namespace: string; name: string; uid?: string } };
    assert.deepEqual(withPod.pod, { namespace: meta.namespace, name: meta.name, uid: meta.uid });

    await env.containerd.cri.stopPodSandbox(sb.id);
    const stopped = await agentState(env.node);
    assert.ok(
      !stopped.attachments.some((a) => a.key.containerId === sb.id),
      'attachment left after StopPodSandbox',
    );
    await waitCooling(env.node, sb.ip);
    assert.ok(!(await hostLinks(env.node)).includes(att.hostVeth), `host veth ${att.hostVeth} left behind`);
    await env.containerd.cri.removePodSandbox(sb.id);
    assert.ok(!(await env.containerd.cri.listPodSandboxIds()).includes(sb.id));
    assert.ok(!(await agentState(env.node)).attachments.some((a) => a.key.containerId === sb.id));
  });

  test('removing the first of two sandboxes of one pod keeps the second one on the network', async () => {
    const meta = await registeredPod('db');
    // Same pod (name, namespace, uid), next attempt: what kubelet does when it replaces a sandbox.
    const first = await runSandbox(env, meta);
    const second = await runSandbox(env, { ...meta, attempt: 1 });
    assert.notEqual(first.id, second.id);
    assert.notEqual(first.ip, second.ip);
    const host = env.lab.vpcHosts[0]!.ip;
    assert.ok(await pingsFrom(second.netns, host), 'second sandbox cannot reach the VPC host');
    const secondVeth = (await agentState(env.node)).attachments.find(
      (a) => a.key.containerId === second.id,
    )!.hostVeth;

    await stopAndRemove(first.id);
    const state = await agentState(env.node);
    assert.ok(
      !state.attachments.some((a) => a.key.containerId === first.id),
      'first sandbox still in the ledger',
    );
    assert.ok(
      state.attachments.some((a) => a.key.containerId === second.id),
      'second sandbox lost its attachment',
    );
    assert.ok((await hostLinks(env.node)).includes(secondVeth), 'second sandbox lost its host veth');
    assert.ok(
      await pingsFrom(second.netns, host),
      'second sandbox lost its network when the first was removed',
    );
    await stopAndRemove(second.id);
  });
});

describe('containerd 1.6 CRI with a pod that has its own security groups (branch ENI, trunk driver macvlan)', {
  skip: containerdGate.skip,
}, () => {
  const env = containerdInLab('vpcrb', [
    '--pod-eni',
    '--trunk-driver',
    'macvlan',
    '--instance-type',
    'm5.2xlarge',
  ]);
  before(async () => {
    await waitForTrunk(env.labName, env.node.name);
  });

  interface BranchView {
    bindings: { key: { podUid: string }; holder?: { containerId: string } }[];
    events: { preventedTeardowns: number };
  }
  async function branchView(): Promise<BranchView> {
    return (await agentState(env.node)) as unknown as BranchView;
  }
  async function branchDevices(): Promise<string[]> {
    return (await hostLinks(env.node)).filter((l) => l.startsWith('vlb'));
  }
  async function sgPod(name: string): Promise<{ meta: PodSandboxMetadata; ip: string }> {
    const uid = `uid-${env.labName}-${name}`;
    const eni = await registerSgPod(env.labName, env.node.name, 'default', name, uid);
    return { meta: { name, uid, namespace: 'default', attempt: 0 }, ip: eni.ip };
  }

  test('10. the kubelet’s sandbox change: Stop A, Run B for the same pod, Remove A after → B keeps its network', async () => {
    const cri = env.containerd.cri;
    const host = env.lab.vpcHosts[0]!.ip;
    const pod = await sgPod('sg-web');
    const a = await runSandbox(env, pod.meta);
    assert.equal(a.ip, pod.ip, 'the sandbox has its branch ENI’s address');
    assert.ok(await pingsFrom(a.netns, host), 'A reaches the VPC host');

    await cri.stopPodSandbox(a.id);
    const b = await runSandbox(env, { ...pod.meta, attempt: 1 });
    assert.equal(b.ip, pod.ip, 'the new sandbox has the same branch ENI’s address');
    assert.ok(await pingsFrom(b.netns, host), 'B reaches the VPC host');

    // The old sandbox's RemovePodSandbox: a DEL with an empty CNI_NETNS, after B's ADD.
    await cri.removePodSandbox(a.id);
    assert.ok(await pingsFrom(b.netns, host), 'B lost its network when A was removed');
    const view = await branchView();
    const binding = view.bindings.find((x) => x.key.podUid === pod.meta.uid);
    assert.equal(binding?.holder?.containerId, b.id, 'B holds the branch ENI');
    assert.equal((await branchDevices()).length, 1, 'one branch device, B’s');

    await cri.stopPodSandbox(b.id);
    await cri.removePodSandbox(b.id);
    assert.deepEqual(await branchDevices(), [], 'the last sandbox takes the branch device with it');
  });

  test('10b. two live sandboxes of the pod: Stop+Remove of the older one is prevented from tearing down the newer one’s network', async () => {
    const cri = env.containerd.cri;
    const host = env.lab.vpcHosts[0]!.ip;
    const pod = await sgPod('sg-db');
    const a = await runSandbox(env, pod.meta);
    const b = await runSandbox(env, { ...pod.meta, attempt: 1 });
    assert.equal(b.ip, pod.ip);
    assert.ok(await pingsFrom(b.netns, host), 'B reaches the VPC host');
    const prevented = (await branchView()).events.preventedTeardowns;

    await cri.stopPodSandbox(a.id);
    await cri.removePodSandbox(a.id);
    assert.ok(await pingsFrom(b.netns, host), 'B lost its network when A was stopped and removed');
    const view = await branchView();
    assert.equal(view.events.preventedTeardowns, prevented + 1, 'the prevented teardown is counted');
    assert.equal(view.bindings.find((x) => x.key.podUid === pod.meta.uid)?.holder?.containerId, b.id);

    await cri.stopPodSandbox(b.id);
    await cri.removePodSandbox(b.id);
    assert.deepEqual(await branchDevices(), []);
  });
});
