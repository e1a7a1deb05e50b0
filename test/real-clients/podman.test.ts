// podman 4.3 with its CNI backend calls the installed plugin from inside a lab node's network
// namespace. podman differs from the other clients: it calls VERSION (with CNI_NETNS=dummy)
// before every ADD and DEL, names the container by its own 64-hex ID, and brings no Kubernetes
// identity, so the pod gets regular networking.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  agentState,
  hostLinks,
  type LabDesc,
  type LabNodeDesc,
  labDown,
  labUp,
  uniqueLabName,
} from '../lab-fixture.ts';
import { gate, runClient } from './clients.ts';
import { busyboxImage, busyboxRootfsPath, type PrivatePodman, startPodman } from './podman-env.ts';

const podmanGate = await gate('podman', [
  { program: 'podman' },
  { program: 'conmon' },
  { file: busyboxRootfsPath },
]);

// Root lacks CAP_SYS_RESOURCE here, so podman must not raise these limits past the current ones.
const ulimits = ['--ulimit', 'nofile=4096:4096', '--ulimit', 'nproc=4096:4096'];

async function pingsFrom(netnsPath: string, ip: string): Promise<boolean> {
  return (await runClient(['nsenter', `--net=${netnsPath}`, 'ping', '-c', '1', '-W', '2', ip])).code === 0;
}

describe('podman 4.3 (CNI backend) in a lab node namespace', { skip: podmanGate.skip }, () => {
  const labName = uniqueLabName('vpcrc');
  let lab: LabDesc;
  let node: LabNodeDesc;
  let podman: PrivatePodman | undefined;

  before(async () => {
    podmanGate.assertPresent();
    await labDown(labName);
    lab = await labUp(labName);
    node = lab.nodes[0]!;
    podman = await startPodman(labName, node);
  });
  after(async () => {
    // The lab goes also when podman's clean-up fails (its namespaces must never be left).
    try {
      if (podman) await podman.stop();
    } finally {
      await labDown(labName);
    }
  });

  interface Container {
    id: string;
    ip: string;
    netns: string;
  }

  async function runContainer(name: string): Promise<Container> {
    const id = await podman!.must([
      'run',
      '--detach',
      '--name',
      name,
      '--pull',
      'never',
      '--network',
      'vpcnet',
      ...ulimits,
      busyboxImage,
      'sleep',
      '3600',
    ]);
    const [ip, netns] = (
      await podman!.must([
        'inspect',
        name,
        '--format',
        '{{.NetworkSettings.Networks.vpcnet.IPAddress}} {{.NetworkSettings.SandboxKey}}',
      ])
    ).split(' ');
    assert.match(ip ?? '', /^10\.0\./, `container address "${ip}" is not in the VPC`);
    const att = (await agentState(node)).attachments.find((a) => a.key.containerId === id);
    assert.ok(att, `container ${id} has no attachment in the agent's ledger`);
    assert.equal(att.ip, ip, 'podman reports a different address than the ledger');
    return { id, ip: ip!, netns: netns! };
  }

  async function removeContainer(name: string): Promise<void> {
    await podman!.must(['rm', '--force', '--time', '0', name]);
  }

  test('a container on --network vpcnet gets a VPC address that reaches the VPC host; rm -f releases it', async () => {
    const c = await runContainer('web');
    assert.ok(await pingsFrom(c.netns, lab.vpcHosts[0]!.ip), `container ${c.ip} cannot reach the VPC host`);
    const veth = (await agentState(node)).attachments.find((a) => a.key.containerId === c.id)!.hostVeth;

    await removeContainer('web');
    const state = await agentState(node);
    assert.ok(
      !state.attachments.some((a) => a.key.containerId === c.id),
      'attachment left after podman rm -f',
    );
    assert.ok(
      state.cooling.some((x) => x.ip === c.ip),
      `${c.ip} was not released`,
    );
    assert.ok(!(await hostLinks(node)).includes(veth), `host veth ${veth} left behind`);
  });

  test('two containers get distinct addresses, and removing one keeps the other on the network', async () => {
    const a = await runContainer('a');
    const b = await runContainer('b');
    assert.notEqual(a.ip, b.ip);
    assert.ok(await pingsFrom(a.netns, b.ip), 'container a cannot reach container b');
    await removeContainer('a');
    assert.ok(
      await pingsFrom(b.netns, lab.vpcHosts[0]!.ip),
      'container b lost its network when a was removed',
    );
    assert.ok((await agentState(node)).attachments.some((x) => x.key.containerId === b.id));
    await removeContainer('b');
  });
});
