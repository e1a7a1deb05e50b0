// What `kubectl exec` into a lab's pods runs: the DaemonSet pod's command as its node's container
// would run it, and a Status refusing everything else. A checkout and a netns directory of the
// test's own stand for the repository's bin/ and /var/run/netns.
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { KubeError } from '../emulator/kube/object-store.ts';
import type { JsonObject } from '../emulator/kube/objects.ts';
import type { ContainerRuntime, ExecRequest } from '../emulator/kube/pod-exec.ts';
import { labLayout } from './layout.ts';
import { daemonSetPod, daemonSetPodName, labContainerRuntime, VPCNET_DAEMONSET } from './pod-runtime.ts';

const LAB = 'podrt';

function execOf(pod: JsonObject, command: string[], container = 'vpcnet'): ExecRequest {
  const meta = pod.metadata as { namespace: string; name: string };
  return {
    namespace: meta.namespace,
    podName: meta.name,
    pod,
    container,
    command,
    stdin: false,
    stdout: true,
    stderr: true,
  };
}

function refusedWith(run: () => unknown, message: RegExp): void {
  assert.throws(run, (e: unknown) => e instanceof KubeError && e.code === 400 && message.test(e.message));
}

describe('the lab container runtime', () => {
  let repo: string;
  let netnsDir: string;
  let runtime: ContainerRuntime;
  const node2 = labLayout(LAB, 2).nodes[1]!;
  const pod = daemonSetPod(node2, '10.0.0.12');

  before(async () => {
    repo = await mkdtemp(join(tmpdir(), 'pod-runtime-'));
    await mkdir(join(repo, 'bin'));
    await writeFile(join(repo, 'bin', 'vpcnetctl'), '#!/usr/bin/env node\nconsole.log(1)\n');
    await writeFile(join(repo, 'bin', 'vpcnet'), Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1]));
    await chmod(join(repo, 'bin', 'vpcnet'), 0o755);
    netnsDir = join(repo, 'netns');
    await mkdir(netnsDir);
    await writeFile(join(netnsDir, node2.netns), '');
    runtime = labContainerRuntime(LAB, repo, { netnsDir });
  });
  after(() => rm(repo, { recursive: true, force: true }));

  test("the DaemonSet pod is the manifests' pod: kube-system, its labels, container vpcnet, on its node", () => {
    assert.equal(daemonSetPodName(node2), 'vpcnet-node2');
    const meta = pod.metadata as { namespace: string; labels: Record<string, string> };
    assert.equal(meta.namespace, 'kube-system');
    assert.deepEqual(meta.labels, { 'app.kubernetes.io/name': 'vpcnet', 'k8s-app': 'vpcnet' });
    const spec = pod.spec as { nodeName: string; hostNetwork: boolean; containers: { name: string }[] };
    assert.equal(spec.nodeName, 'node2');
    assert.equal(spec.hostNetwork, true);
    assert.deepEqual(
      spec.containers.map((c) => c.name),
      [VPCNET_DAEMONSET.container],
    );
  });

  test("/opt/vpcnet/bin/vpcnetctl runs as bin/vpcnetctl under this Node, in the node's namespace, with its agent's socket", () => {
    const p = runtime(execOf(pod, ['/opt/vpcnet/bin/vpcnetctl', 'state', '--json']));
    assert.equal(p.file, 'nsenter');
    assert.deepEqual(p.args, [
      `--net=${join(netnsDir, node2.netns)}`,
      process.execPath,
      join(repo, 'bin', 'vpcnetctl'),
      'state',
      '--json',
    ]);
    assert.equal(p.env.VPCNET_AGENT_SOCKET, node2.agentSocket);
    assert.equal(p.env.MY_NODE_NAME, 'node2');
    assert.ok(p.env.PATH?.startsWith(`${join(repo, 'bin')}:`), "the image's bin dir first on PATH");
    assert.equal(p.env.ENABLE_POD_ENI, undefined);
  });

  test("in a --pod-eni lab, the agent's pod-ENI settings too", () => {
    const podEni = labContainerRuntime(LAB, repo, { netnsDir, podEni: { trunkDriver: 'macvlan' } });
    const p = podEni(execOf(pod, ['/opt/vpcnet/bin/vpcnetctl', 'doctor']));
    assert.equal(p.env.ENABLE_POD_ENI, 'true');
    assert.equal(p.env.VPCNET_TRUNK_DRIVER, 'macvlan');
  });

  test('a native program runs as itself', () => {
    const p = runtime(execOf(pod, ['/opt/vpcnet/bin/vpcnet']));
    assert.deepEqual(p.args, [`--net=${join(netnsDir, node2.netns)}`, join(repo, 'bin', 'vpcnet')]);
  });

  test('anything outside /opt/vpcnet/bin, or climbing out of it, is refused', () => {
    for (const command of [
      '/bin/sh',
      'vpcnetctl',
      '/opt/vpcnet/bin/../../../bin/sh',
      '/opt/vpcnet/bin/package.json',
    ])
      refusedWith(
        () => runtime(execOf(pod, [command])),
        /only the image's programs in \/opt\/vpcnet\/bin\/ do/,
      );
  });

  test('a program the checkout has not built is refused naming the build', () => {
    refusedWith(() => runtime(execOf(pod, ['/opt/vpcnet/bin/vpcnetd'])), /is not built: npm run build/);
  });

  test("a pod that is not the DaemonSet's runs nothing", () => {
    const other = {
      ...pod,
      metadata: { name: 'web', namespace: 'default', labels: { app: 'web' } },
    };
    refusedWith(
      () => runtime(execOf(other, ['/opt/vpcnet/bin/vpcnetctl'])),
      /runs no container in lab podrt/,
    );
  });

  test('a container other than vpcnet is refused', () => {
    refusedWith(
      () => runtime(execOf(pod, ['/opt/vpcnet/bin/vpcnetctl'], 'install-cni')),
      /container install-cni is not valid for pod vpcnet-node2/,
    );
  });

  test('a pod on a node the lab does not have, or whose namespace is gone, is refused', () => {
    const elsewhere = { ...pod, spec: { ...(pod.spec as JsonObject), nodeName: 'ip-10-0-0-9' } };
    refusedWith(() => runtime(execOf(elsewhere, ['/opt/vpcnet/bin/vpcnetctl'])), /no node of lab podrt/);
    const node1 = daemonSetPod(labLayout(LAB, 1).nodes[0]!, '10.0.0.11');
    refusedWith(
      () => runtime(execOf(node1, ['/opt/vpcnet/bin/vpcnetctl'])),
      /network namespace podrt-node1 is gone/,
    );
  });
});
