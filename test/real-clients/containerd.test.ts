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
  uniqueLabName,
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

describe('containerd 1.6 CRI in a lab node namespace', { skip: containerdGate.skip }, () => {
  const labName = uniqueLabName('vpcrc');
  let lab: LabDesc;
  let node: LabNodeDesc;
  let dir: string | undefined;
  let containerd: PrivateContainerd | undefined;

  before(async () => {
    containerdGate.assertPresent();
    await labDown(labName);
    dir = await prepareContainerdDir(labName); // before `lab up`: see containerd-daemon.ts
    lab = await labUp(labName);
    node = lab.nodes[0]!;
    containerd = await startContainerd(dir, node);
  });
  after(async () => {
    if (containerd) await containerd.stop();
    else if (dir) await removeContainerdDir(dir);
    await labDown(labName);
  });

  async function registeredPod(name: string, attempt = 0): Promise<PodSandboxMetadata> {
    const uid = `uid-${labName}-${name}`;
    await registerPod(labName, node.name, 'default', name, uid);
    return { name, uid, namespace: 'default', attempt };
  }

  /** Runs a sandbox and returns its id, VPC address and netns path, checked against the ledger. */
  async function runSandbox(meta: PodSandboxMetadata): Promise<{ id: string; ip: string; netns: string }> {
    const cri = containerd!.cri;
    const id = await cri.runPodSandbox(meta);
    const status = await cri.podSandboxStatus(id);
    assert.equal(status.status.state, 'SANDBOX_READY');
    const ip = status.status.network?.ip ?? '';
    assert.match(ip, /^10\.0\./, `sandbox address "${ip}" is not in the VPC`);
    const att = (await agentState(node)).attachments.find((a) => a.key.containerId === id);
    assert.ok(att, `sandbox ${id} has no attachment in the agent's ledger`);
    assert.equal(att.ip, ip, 'containerd reports a different address than the ledger');
    return { id, ip, netns: sandboxNetnsPath(status) };
  }

  async function stopAndRemove(id: string): Promise<void> {
    await containerd!.cri.stopPodSandbox(id);
    // The second DEL (empty CNI_NETNS, no prevResult) must succeed or this rejects.
    await containerd!.cri.removePodSandbox(id);
  }

  test('RunPodSandbox gives the sandbox a VPC address that reaches the VPC host; Stop+Remove release it', async () => {
    const meta = await registeredPod('web');
    const sb = await runSandbox(meta);
    assert.ok(await pingsFrom(sb.netns, lab.vpcHosts[0]!.ip), `sandbox ${sb.ip} cannot reach the VPC host`);
    const att = (await agentState(node)).attachments.find((a) => a.key.containerId === sb.id)!;
    const withPod = att as typeof att & { pod?: { namespace: string; name: string; uid?: string } };
    assert.deepEqual(withPod.pod, { namespace: meta.namespace, name: meta.name, uid: meta.uid });

    await containerd!.cri.stopPodSandbox(sb.id);
    const stopped = await agentState(node);
    assert.ok(
      !stopped.attachments.some((a) => a.key.containerId === sb.id),
      'attachment left after StopPodSandbox',
    );
    assert.ok(
      stopped.cooling.some((c) => c.ip === sb.ip),
      `${sb.ip} was not released`,
    );
    assert.ok(!(await hostLinks(node)).includes(att.hostVeth), `host veth ${att.hostVeth} left behind`);
    await containerd!.cri.removePodSandbox(sb.id);
    assert.ok(!(await containerd!.cri.listPodSandboxIds()).includes(sb.id));
    assert.ok(!(await agentState(node)).attachments.some((a) => a.key.containerId === sb.id));
  });

  test('removing the first of two sandboxes of one pod keeps the second one on the network', async () => {
    const meta = await registeredPod('db');
    // Same pod (name, namespace, uid), next attempt: what kubelet does when it replaces a sandbox.
    const first = await runSandbox(meta);
    const second = await runSandbox({ ...meta, attempt: 1 });
    assert.notEqual(first.id, second.id);
    assert.notEqual(first.ip, second.ip);
    const host = lab.vpcHosts[0]!.ip;
    assert.ok(await pingsFrom(second.netns, host), 'second sandbox cannot reach the VPC host');
    const secondVeth = (await agentState(node)).attachments.find(
      (a) => a.key.containerId === second.id,
    )!.hostVeth;

    await stopAndRemove(first.id);
    const state = await agentState(node);
    assert.ok(
      !state.attachments.some((a) => a.key.containerId === first.id),
      'first sandbox still in the ledger',
    );
    assert.ok(
      state.attachments.some((a) => a.key.containerId === second.id),
      'second sandbox lost its attachment',
    );
    assert.ok((await hostLinks(node)).includes(secondVeth), 'second sandbox lost its host veth');
    assert.ok(
      await pingsFrom(second.netns, host),
      'second sandbox lost its network when the first was removed',
    );
    await stopAndRemove(second.id);
  });
});
