// A lab whose agents run in the vpcnet image (`npm run image`, then `lab up --agent-image`), as
// the DaemonSet runs them: pods get their network through the agent in the container, the agent
// really is in the container (its own PID namespace, under conmon, with only NET_ADMIN and
// SYS_ADMIN), a pod namespace made after the agent started is usable (rslave propagation of
// /var/run/netns), and `lab down` removes the container. Prints the image size and the agent's RSS.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runProcess, runToSuccess } from '../../src/infra/process.ts';
import { readConfList, runChain } from '../../src/lab/cni-runtime.ts';
import { labLayout } from '../../src/lab/layout.ts';
import { PODMAN } from '../../src/lab/podman.ts';
import { agentContainerName } from '../../src/lab/processes/agent-container.ts';
import { readRecords } from '../../src/lab/processes/processes.ts';
import {
  addPod,
  agentState,
  type BuiltAgentImage,
  buildAgentImage,
  hostLinks,
  type LabDesc,
  type LabNodeDesc,
  labDown,
  labUp,
  newPod,
  podCall,
  reaches,
  repoRoot,
  type TestPod,
  uniqueLabName,
  waitFor,
} from '../lab-fixture.ts';

const underCi = process.env.CI === 'true' || process.env.CI === '1';
const needed = ['podman', 'conmon', 'mmdebstrap', 'strip'];
const missing: string[] = [];
for (const program of needed) {
  if ((await runProcess(['sh', '-c', `command -v ${program}`])).code !== 0) missing.push(program);
}
const missingText = `missing ${missing.join(', ')} (apt-get install podman mmdebstrap binutils)`;
const skip = missing.length > 0 && !underCi ? missingText : false;

/** Parent PIDs of `pid` up to PID 1 (from /proc/<pid>/stat). */
async function ancestors(pid: number): Promise<number[]> {
  const out: number[] = [];
  let current = pid;
  while (current > 1) {
    const stat = await readFile(`/proc/${current}/stat`, 'utf8');
    current = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    out.push(current);
  }
  return out;
}

/** What is left of lab `name`: its network namespaces and its state dir. */
async function labTraces(name: string): Promise<string[]> {
  const namespaces = (await runToSuccess(['ip', 'netns', 'list'])).stdout
    .split('\n')
    .map((l) => l.split(' ')[0] ?? '')
    .filter((n) => n.startsWith(`${name}-`));
  const dir = labLayout(name, 0).stateDir;
  return [...namespaces, ...(existsSync(dir) ? [dir] : [])];
}

async function procStatusField(pid: number, field: string): Promise<string> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const line = status.split('\n').find((l) => l.startsWith(`${field}:`));
  if (line === undefined) throw new Error(`/proc/${pid}/status has no ${field}`);
  return line.slice(field.length + 1).trim();
}

const CAP_NET_ADMIN = 12n;
const CAP_SYS_ADMIN = 21n;

describe('agents in the vpcnet image (lab up --agent-image)', { skip }, () => {
  const labName = uniqueLabName('im');
  let built: BuiltAgentImage;
  let lab: LabDesc;
  let node: LabNodeDesc;
  let container: string;

  before(async () => {
    if (missing.length > 0) throw new Error(missingText);
    const started = Date.now();
    built = await buildAgentImage();
    process.stderr.write(`agent-image: image built in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    await labDown(labName);
    // By ID: other checkouts on one machine may retag localhost/vpcnet:<version> meanwhile.
    lab = await labUp(labName, ['--agent-image', built.id]);
    node = lab.nodes[0]!;
    container = agentContainerName(labLayout(labName, 1), labLayout(labName, 1).nodes[0]!);
  });
  after(async () => {
    await labDown(labName);
  });

  test('the image is localhost/vpcnet:<version>, and its size is reported', async (t) => {
    const { version } = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as {
      version: string;
    };
    assert.equal(built.image, `localhost/vpcnet:${version}`);
    assert.ok(built.sizeBytes > 0);
    t.diagnostic(`image ${built.image}: ${(built.sizeBytes / 1e6).toFixed(1)} MB`);
  });

  test('the agent runs in the container: PID 1 of its own namespace, under conmon, not under the lab supervisor', async () => {
    const inspected = JSON.parse(
      (await runToSuccess(['podman', 'inspect', '--type', 'container', container])).stdout,
    ) as { State: { Running: boolean; Pid: number }; Image: string; Path: string }[];
    const c = inspected[0]!;
    assert.equal(c.State.Running, true);
    assert.equal(c.Image, built.id);
    assert.equal(c.Path, '/opt/vpcnet/bin/vpcnetd');
    const hostPid = c.State.Pid;
    assert.match(await readFile(`/proc/${hostPid}/cmdline`, 'utf8'), /\/opt\/vpcnet\/bin\/vpcnetd/);
    // The agent reports its own PID: 1 inside the container's PID namespace.
    assert.equal((await agentState(node)).pid, 1);
    const supervisor = (await readRecords(labLayout(labName, 0).files.pidsDir)).find(
      (r) => r.role === 'supervisor',
    );
    assert.ok(supervisor, 'the lab has a supervisor record');
    const chain = await ancestors(hostPid);
    assert.ok(!chain.includes(supervisor.pid), `agent ${hostPid} descends from the supervisor (${chain})`);
    const parent = await readFile(`/proc/${chain[0]}/cmdline`, 'utf8');
    assert.match(parent, /conmon/, 'the agent is a child of conmon');
  });

  test('the agent holds exactly NET_ADMIN and SYS_ADMIN', async () => {
    const hostPid = Number(
      (await runToSuccess(['podman', 'inspect', '--format', '{{.State.Pid}}', container])).stdout,
    );
    const effective = BigInt(`0x${await procStatusField(hostPid, 'CapEff')}`);
    assert.equal(effective, (1n << CAP_NET_ADMIN) | (1n << CAP_SYS_ADMIN));
  });

  test('pods made after the agent started get addresses, reach each other and the VPC host, and DEL removes them', async (t) => {
    const pods: TestPod[] = [await newPod(labName, 'p1'), await newPod(labName, 'p2')];
    // Propagation: the namespaces were mounted after the container started, and it sees them.
    const inside = (await runToSuccess([...PODMAN, 'exec', container, 'ls', '/var/run/netns'])).stdout;
    for (const pod of pods)
      assert.ok(inside.split('\n').includes(pod.netnsName), `${pod.netnsName} in ${inside}`);
    const [a, b] = [await addPod(node, pods[0]!), await addPod(node, pods[1]!)];
    assert.match(a.ip, /^10\.0\./);
    assert.notEqual(a.ip, b.ip);
    assert.ok(await reaches(pods[0]!.netnsName, b.ip), 'pod 1 reaches pod 2');
    assert.ok(await reaches(pods[1]!.netnsName, lab.vpcHosts[0]!.ip), 'pod 2 reaches the VPC host');
    assert.ok(await reaches(lab.vpcHosts[0]!.netns, a.ip), 'the VPC host reaches pod 1');
    const state = await agentState(node);
    const veths = state.attachments.map((x) => x.hostVeth);
    assert.equal(veths.length, 2);
    for (const v of veths) assert.ok((await hostLinks(node)).includes(v));

    const hostPid = Number(
      (await runToSuccess(['podman', 'inspect', '--format', '{{.State.Pid}}', container])).stdout,
    );
    t.diagnostic(`agent RSS inside the image, two pods: ${await procStatusField(hostPid, 'VmRSS')}`);

    // DEL through the whole chain (portmap from the image, then vpcnet), with the ADD results.
    const list = await readConfList(join(node.cniConfDir, '10-vpcnet.conflist'));
    assert.deepEqual(
      list.plugins.map((p) => p.type),
      ['vpcnet', 'portmap'],
    );
    await runChain(podCall(node, 'DEL', pods[0]!), list, a.result);
    await runChain(podCall(node, 'DEL', pods[1]!), list, b.result);
    await waitFor('both attachments gone', async () =>
      (await agentState(node)).attachments.length === 0 ? true : undefined,
    );
    const links = await hostLinks(node);
    for (const v of veths) assert.ok(!links.includes(v), `${v} left behind`);
  });

  test("the image's vpcnetctl reads the agent's state over the socket from inside the container", async () => {
    const out = await runToSuccess([
      ...PODMAN,
      'exec',
      container,
      '/opt/vpcnet/bin/vpcnetctl',
      'state',
      '--agent-socket',
      node.agentSocket,
    ]);
    const state = JSON.parse(out.stdout) as { pid: number; pool: { enis: unknown[] } };
    assert.equal(state.pid, 1);
    assert.ok(state.pool.enis.length >= 1);
  });

  test("the DaemonSet's probes, run in the container as the kubelet would, pass while the agent serves", async () => {
    for (const probe of [['health'], ['health', '--live']]) {
      const out = await runProcess([
        ...PODMAN,
        'exec',
        container,
        '/opt/vpcnet/bin/vpcnetctl',
        ...probe,
        '--agent-socket',
        node.agentSocket,
      ]);
      assert.equal(out.code, 0, `vpcnetctl ${probe.join(' ')}: ${out.stdout}${out.stderr}`);
    }
    const status = await runProcess([
      ...PODMAN,
      'exec',
      container,
      '/opt/vpcnet/bin/vpcnetctl',
      'status',
      '--json',
      '--agent-socket',
      node.agentSocket,
    ]);
    assert.notEqual(status.code, 3, status.stdout + status.stderr);
    assert.equal((JSON.parse(status.stdout) as { agent: { ready: boolean } }).agent.ready, true);
  });

  test('an agent container that dies is started again by the lab supervisor, as a DaemonSet would', async () => {
    const pidOf = async (): Promise<number> =>
      Number((await runToSuccess(['podman', 'inspect', '--format', '{{.State.Pid}}', container])).stdout);
    const before = await pidOf();
    await runToSuccess(['podman', 'kill', container]);
    const after = await waitFor(
      'a new agent container',
      async () => {
        const pid = await pidOf();
        if (pid === 0 || pid === before) return undefined;
        return (await agentState(node)).pid === 1 ? pid : undefined;
      },
      60_000,
    );
    assert.notEqual(after, before);
  });

  test('lab down removes the agent container', async () => {
    await labDown(labName);
    const left = await runProcess(['podman', 'container', 'exists', container]);
    assert.equal(left.code, 1, `container ${container} still exists`);
  });

  test('lab up with an image podman does not have fails before making anything, and says how to build it', async () => {
    const name = uniqueLabName('im');
    const r = await runProcess([
      process.execPath,
      join(repoRoot, 'bin', 'vpcnetctl'),
      'lab',
      'up',
      '--name',
      name,
      '--detach',
      '--agent-image',
      'localhost/vpcnet:no-such-tag',
    ]);
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /localhost\/vpcnet:no-such-tag is not in podman's store: build it with `npm run image`/,
    );
    assert.deepEqual(await labTraces(name), []);
  });

  test('an agent that cannot start in its container fails lab up, and its container and namespaces are removed', async () => {
    const name = uniqueLabName('im');
    const layout = labLayout(name, 1);
    const r = await runProcess([
      process.execPath,
      join(repoRoot, 'bin', 'vpcnetctl'),
      'lab',
      'up',
      '--name',
      name,
      '--detach',
      '--json',
      '--agent-image',
      built.id,
      '--agent-env',
      'WARM_IP_TARGET=not-a-number',
    ]);
    await labDown(name).catch(() => undefined);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '', '--json prints nothing on stdout when the lab did not come up');
    assert.match(r.stderr, /WARM_IP_TARGET must be a non-negative integer/);
    const container = agentContainerName(layout, layout.nodes[0]!);
    assert.equal((await runProcess(['podman', 'container', 'exists', container])).code, 1);
    assert.deepEqual(await labTraces(name), []);
  });
});
