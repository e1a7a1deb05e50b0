// The lab through its CLI: `lab up --detach --json`, reachability inside the lab, the supervisor
// restarting a dead agent, `lab pod` (with pod ENIs too), and `lab down` (also after the supervisor
// was SIGKILLed).
// Test turn: shared (it waits on its own lab's agents and timers; no CPU or latency bound).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { runCommand } from '../../src/lab/command.ts';
import { type LabDescription, labLayout } from '../../src/lab/layout.ts';
import { listNetns } from '../../src/lab/netns.ts';
import {
  isRecordedProcessAlive,
  type ProcessRecord,
  readRecords,
} from '../../src/lab/processes/processes.ts';
import { canCreateVlanDevices } from '../../src/lab/trunk-driver.ts';
import { unixHttp } from '../../src/lab/unix-http.ts';
import { labDown } from '../../src/lab/verbs/down.ts';

const repoRoot = join(import.meta.dirname, '..', '..');
const prefix = `vpclt${randomBytes(3).toString('hex')}`;
const env = { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };

// The lab runs the built executables, as users do (`npm test` builds them first).
const ctl = [join(repoRoot, 'bin', 'vpcnetctl')];

function vpcnetctl(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [...ctl, ...args], { cwd: repoRoot, env, encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function labUp(name: string, ...extra: string[]): LabDescription {
  const r = vpcnetctl('lab', 'up', '--name', name, '--detach', '--json', ...extra);
  assert.equal(r.status, 0, `lab up failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as LabDescription;
}

async function labTraces(name: string, records: readonly ProcessRecord[]): Promise<string[]> {
  const namespaces = (await listNetns()).filter((n) => n.startsWith(`${name}-`));
  const alive = records.filter(isRecordedProcessAlive).map((r) => `${r.role} pid ${r.pid}`);
  const dir = existsSync(labLayout(name, 0).stateDir) ? [labLayout(name, 0).stateDir] : [];
  return [...namespaces, ...alive, ...dir];
}

const IMDS_SCRIPT = `
const base = 'http://169.254.169.254/latest';
const token = await (await fetch(base + '/api/token', { method: 'PUT', headers: { 'x-aws-ec2-metadata-token-ttl-seconds': '60' } })).text();
const r = await fetch(base + '/meta-data/instance-id', { headers: { 'x-aws-ec2-metadata-token': token } });
process.stdout.write(r.status + ' ' + (await r.text()));
`;

describe('lab', () => {
  const name = `${prefix}a`;
  let lab: LabDescription;

  after(async () => {
    await labDown(name);
    await labDown(`${prefix}b`);
  });

  test('lab up refuses --trunk-driver without --pod-eni, and an unknown driver, as usage errors', () => {
    const alone = vpcnetctl('lab', 'up', '--name', `${prefix}u`, '--trunk-driver', 'vlan');
    assert.equal(alone.status, 2);
    assert.match(alone.stderr, /--trunk-driver is for pods with their own security groups: add --pod-eni/);
    const unknown = vpcnetctl('lab', 'up', '--name', `${prefix}u`, '--pod-eni', '--trunk-driver', 'ipvlan');
    assert.equal(unknown.status, 2);
    assert.match(unknown.stderr, /--trunk-driver must be one of vlan, macvlan/);
  });

  test('lab up --detach --json prints the lab description with exactly the documented fields', () => {
    lab = labUp(name, '--nodes', '2');
    assert.deepEqual(Object.keys(lab).sort(), ['emulator', 'name', 'nodes', 'vpcHosts', 'vpcNetns']);
    assert.equal(lab.name, name);
    assert.equal(lab.vpcNetns, `${name}-vpc`);
    assert.deepEqual(
      lab.nodes.map((n) => [n.name, n.netns, Object.keys(n).sort()]),
      [1, 2].map((k) => [
        `node${k}`,
        `${name}-node${k}`,
        ['agentSocket', 'cniBinDir', 'cniConfDir', 'name', 'netns'],
      ]),
    );
    assert.deepEqual(lab.vpcHosts, [{ netns: `${name}-host1`, ip: '10.0.32.10' }]);
    assert.deepEqual(lab.emulator, {
      ec2Endpoint: 'http://10.0.255.254',
      imdsEndpoint: 'http://169.254.169.254',
      kubeEndpoint: 'http://10.0.255.254:6443',
    });
  });

  test('every node namespace reaches IMDS (token PUT, then instance-id) and gets its own instance', async () => {
    const ids = [];
    for (const node of lab.nodes) {
      const out = await runCommand('ip', [
        'netns',
        'exec',
        node.netns,
        process.execPath,
        '--input-type=module',
        '-e',
        IMDS_SCRIPT,
      ]);
      assert.match(out, /^200 i-[0-9a-f]+$/);
      ids.push(out);
    }
    assert.equal(new Set(ids).size, lab.nodes.length);
  });

  test('the VPC test host answers ping from a node, and nodes reach each other', async () => {
    const node1 = lab.nodes[0]!;
    await runCommand('ip', ['netns', 'exec', node1.netns, 'ping', '-c', '1', '-W', '2', lab.vpcHosts[0]!.ip]);
    const addr = await runCommand('ip', [
      '-n',
      lab.nodes[1]!.netns,
      '-4',
      '-o',
      'addr',
      'show',
      'dev',
      'eth0',
    ]);
    const node2Ip = /inet (\S+)\//.exec(addr)?.[1];
    assert.ok(node2Ip !== undefined, addr);
    await runCommand('ip', ['netns', 'exec', node1.netns, 'ping', '-c', '1', '-W', '2', node2Ip]);
  });

  test('lab up refuses a name that is already up and says to run lab down', () => {
    const r = vpcnetctl('lab', 'up', '--name', name, '--detach', '--json');
    assert.equal(r.status, 1);
    assert.match(r.stderr, new RegExp(`lab down --name ${name}`));
    assert.equal(r.stdout, '');
  });

  test('lab pod registers the pod bound to its node in the lab Kubernetes API', async () => {
    const r = vpcnetctl(
      'lab',
      'pod',
      '--name',
      name,
      '--node',
      'node2',
      '--namespace',
      'ns1',
      '--pod',
      'p1',
      '--uid',
      'u-1',
    );
    assert.equal(r.status, 0, r.stderr);
    const created = JSON.parse(r.stdout) as { metadata: { uid: string }; spec: { nodeName: string } };
    assert.equal(created.metadata.uid, 'u-1');
    const res = await unixHttp(
      labLayout(name, 0).emulator.adminSocket,
      'GET',
      '/api/v1/namespaces/ns1/pods/p1',
    );
    assert.equal(res.status, 200);
    assert.equal((JSON.parse(res.body) as { spec: { nodeName: string } }).spec.nodeName, 'node2');
  });

  test('lab pod with security groups on a node without trunk fails saying so and registers nothing', async () => {
    const r = vpcnetctl(
      'lab',
      'pod',
      '--name',
      name,
      '--node',
      'node1',
      '--namespace',
      'ns1',
      '--pod',
      'p2',
      '--security-groups',
      'sg-1',
    );
    assert.equal(r.status, 1);
    assert.match(r.stderr, /pod ns1\/p2 gets no branch ENI .*node node1 .*has no trunk ENI yet/);
    const res = await unixHttp(
      labLayout(name, 0).emulator.adminSocket,
      'GET',
      '/api/v1/namespaces/ns1/pods/p2',
    );
    assert.equal(res.status, 404);
  });

  test("the agent's state counts its EC2 calls, made through its own rate limit", async () => {
    const res = await unixHttp(lab.nodes[0]!.agentSocket, 'GET', '/v1/state');
    assert.equal(res.status, 200);
    const ec2 = (
      JSON.parse(res.body) as { ec2?: { calls: number; byAction: Record<string, { calls: number }> } }
    ).ec2;
    assert.ok(ec2 !== undefined, 'state has an ec2 section');
    // At start the agent described its ENIs at least once (the pool is rebuilt from EC2).
    assert.ok((ec2.byAction.DescribeNetworkInterfaces?.calls ?? 0) >= 1, JSON.stringify(ec2));
    assert.ok(ec2.calls >= ec2.byAction.DescribeNetworkInterfaces!.calls);
  });

  test('the supervisor restarts an agent that dies, as a DaemonSet would', async () => {
    const layout = labLayout(name, 2);
    const before = (await readRecords(layout.files.pidsDir)).find((r) => r.role === 'agent-node1');
    assert.ok(before !== undefined && isRecordedProcessAlive(before));
    process.kill(before.pid, 'SIGKILL');
    let after: ProcessRecord | undefined;
    for (let i = 0; i < 100; i++) {
      after = (await readRecords(layout.files.pidsDir)).find((r) => r.role === 'agent-node1');
      if (after !== undefined && after.pid !== before.pid && isRecordedProcessAlive(after)) {
        const res = await unixHttp(lab.nodes[0]!.agentSocket, 'GET', '/v1/healthz').catch(() => undefined);
        if (res?.status === 200) break;
      }
      await sleep(100);
    }
    assert.ok(after !== undefined && after.pid !== before.pid, 'a new agent was recorded');
    const res = await unixHttp(lab.nodes[0]!.agentSocket, 'GET', '/v1/healthz');
    assert.equal(res.status, 200);
  });

  test('lab down leaves no namespace, no process and no state dir of the lab', async () => {
    const records = await readRecords(labLayout(name, 0).files.pidsDir);
    assert.ok(records.length >= 2, 'supervisor and emulator were recorded');
    const r = vpcnetctl('lab', 'down', '--name', name);
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(await labTraces(name, records), []);
  });

  test('lab down cleans up after the supervisor was SIGKILLed', async () => {
    const crashed = `${prefix}b`;
    labUp(crashed);
    const records = await readRecords(labLayout(crashed, 0).files.pidsDir);
    const supervisor = records.find((r) => r.role === 'supervisor');
    assert.ok(supervisor !== undefined);
    process.kill(supervisor.pid, 'SIGKILL');
    await sleep(200);
    assert.ok(records.filter(isRecordedProcessAlive).length > 0, 'children outlive the crashed supervisor');
    const r = vpcnetctl('lab', 'down', '--name', crashed);
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(await labTraces(crashed, records), []);
  });

  test('lab down of a lab that does not exist succeeds', () => {
    const r = vpcnetctl('lab', 'down', '--name', `${prefix}none`);
    assert.equal(r.status, 0, r.stderr);
  });
});

describe('lab with pod ENIs', () => {
  const name = `${prefix}c`;
  let lab: LabDescription;
  let socket: string;

  after(async () => {
    await labDown(name);
  });

  function podCmd(pod: string, ...extra: string[]) {
    return vpcnetctl('lab', 'pod', '--name', name, '--namespace', 'sgp', '--pod', pod, ...extra);
  }

  async function branchEnis(): Promise<{ eniId: string; trunkAssociation: { vlanId: number } | null }[]> {
    const state = JSON.parse((await unixHttp(socket, 'GET', '/admin/state')).body) as {
      enis: { eniId: string; interfaceType: string; trunkAssociation: { vlanId: number } | null }[];
    };
    return state.enis.filter((e) => e.interfaceType === 'branch');
  }

  test('lab up --pod-eni gives the agents ENABLE_POD_ENI and the trunk driver this kernel supports', async () => {
    lab = labUp(name, '--pod-eni', '--instance-type', 'm5.large');
    assert.deepEqual(Object.keys(lab).sort(), ['emulator', 'name', 'nodes', 'vpcHosts', 'vpcNetns']);
    const layout = labLayout(name, 1);
    socket = layout.emulator.adminSocket;
    const expected = (await canCreateVlanDevices(lab.vpcNetns)) ? 'vlan' : 'macvlan';
    assert.equal((await readFile(layout.files.trunkDriver, 'utf8')).trim(), expected);
    const agent = (await readRecords(layout.files.pidsDir)).find((r) => r.role === 'agent-node1');
    assert.ok(agent !== undefined);
    const env = (await readFile(`/proc/${agent.pid}/environ`, 'utf8')).split('\0');
    assert.ok(env.includes('ENABLE_POD_ENI=true'));
    assert.ok(
      env.includes(`VPCNET_TRUNK_DRIVER=${expected}`),
      `agent env has VPCNET_TRUNK_DRIVER=${expected}`,
    );
  });

  test('once the node asks for a trunk, lab pod --security-groups prints the pod with its pod-eni annotation', async () => {
    // The agent's part (it labels its node); done here by hand.
    const patched = await patchNode(socket, 'node1', { 'vpc.amazonaws.com/has-trunk-attached': 'false' });
    assert.equal(patched, 200);
    let r = podCmd('sg1', '--node', 'node1', '--security-groups', 'sg-1,sg-2');
    for (let i = 0; r.status !== 0 && /has no trunk ENI yet/.test(r.stderr) && i < 100; i++) {
      await sleep(100);
      r = podCmd('sg1', '--node', 'node1', '--security-groups', 'sg-1,sg-2');
    }
    assert.equal(r.status, 0, r.stderr);
    const pod = JSON.parse(r.stdout) as {
      metadata: { annotations: Record<string, string> };
      spec: { containers: { resources: { limits: Record<string, string> } }[] };
    };
    assert.equal(pod.spec.containers[0]?.resources.limits['vpc.amazonaws.com/pod-eni'], '1');
    const [entry] = JSON.parse(pod.metadata.annotations['vpc.amazonaws.com/pod-eni'] ?? '[]') as {
      eniId: string;
      ifAddress: string;
      privateIp: string;
      vlanId: number;
      subnetCidr: string;
    }[];
    assert.equal(entry?.vlanId, 1);
    assert.equal(entry?.subnetCidr, '10.0.0.0/20');
    assert.match(entry?.ifAddress ?? '', /^02(:[0-9a-f]{2}){5}$/);
    assert.deepEqual(
      (await branchEnis()).map((e) => [e.eniId, e.trunkAssociation?.vlanId]),
      [[entry?.eniId, 1]],
    );
  });

  test('lab pod --delete removes the pod and its branch ENI; the VLAN ID goes to the next pod; a missing pod is an error', async () => {
    const deleted = podCmd('sg1', '--delete');
    assert.equal(deleted.status, 0, deleted.stderr);
    assert.match(deleted.stdout, /pod sgp\/sg1 deleted/);
    assert.deepEqual(await branchEnis(), []);
    const again = podCmd('sg1', '--delete');
    assert.equal(again.status, 1);
    assert.match(again.stderr, /pod sgp\/sg1 not found/);
    const next = podCmd('sg2', '--node', 'node1', '--security-groups', 'sg-3');
    assert.equal(next.status, 0, next.stderr);
    const annotation = (JSON.parse(next.stdout) as { metadata: { annotations: Record<string, string> } })
      .metadata.annotations['vpc.amazonaws.com/pod-eni'];
    assert.match(annotation ?? '', /"vlanId":1/);
  });
});

/** PATCHes node labels through the lab's admin socket (which serves the Kubernetes slice too). */
function patchNode(socketPath: string, node: string, labels: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        socketPath,
        method: 'PATCH',
        path: `/api/v1/nodes/${node}`,
        headers: { 'content-type': 'application/merge-patch+json' },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ metadata: { labels } }));
  });
}
