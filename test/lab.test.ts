// The lab through its CLI: `lab up --detach --json`, reachability inside the lab, the supervisor
// restarting a dead agent, `lab pod`, and `lab down` (also after the supervisor was SIGKILLed).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { runCommand } from '../src/lab/command.ts';
import { labDown } from '../src/lab/down.ts';
import { type LabDescription, labLayout } from '../src/lab/layout.ts';
import { listNetns } from '../src/lab/netns.ts';
import { isRecordedProcessAlive, type ProcessRecord, readRecords } from '../src/lab/processes.ts';
import { unixHttp } from '../src/lab/unix-http.ts';

const repoRoot = join(import.meta.dirname, '..');
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

  test('lab pod with security groups fails clearly while branch ENIs are not available', () => {
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
    assert.match(r.stderr, /--security-groups needs pod-ENI support/);
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
