// vpcnetctl for people against a one-node lab: pods rows, status's exit code, explain of a pod
// whose host veth was deleted (inside the lab's node namespace only), support-bundle's archive,
// and the probes. The reconcile loop is off so that the deleted veth stays deleted.
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runProcess } from '../../src/infra/process.ts';
import { labLayout } from '../../src/lab/layout.ts';
import {
  addPod,
  agentState,
  cni,
  type LabDesc,
  type LabNodeDesc,
  labDown,
  labUp,
  newPod,
  repoRoot,
  sh,
  type TestPod,
  uniqueLabName,
} from '../lab-fixture.ts';

const ctlPath = join(repoRoot, 'bin', 'vpcnetctl');

/** vpcnetctl as an operator runs it (in the node's namespace for what reads the kernel). */
async function vpcnetctl(args: string[], netns?: string) {
  const argv = [process.execPath, ctlPath, ...args];
  return runProcess(netns === undefined ? argv : ['ip', 'netns', 'exec', netns, ...argv]);
}

describe('vpcnetctl status, pods, explain, support-bundle and health on a lab node', () => {
  const name = uniqueLabName('ct');
  const bundle = `/tmp/${name}-bundle.tar.gz`;
  let lab: LabDesc;
  let node: LabNodeDesc;
  let a: TestPod;
  let b: TestPod;
  const ips: Record<string, string> = {};

  before(async () => {
    await labDown(name);
    lab = await labUp(name, ['--agent-env', 'VPCNET_RECONCILE_SECONDS=0']);
    node = lab.nodes[0]!;
    a = await newPod(name, 'a');
    b = await newPod(name, 'b');
    ips.a = (await addPod(node, a)).ip;
    ips.b = (await addPod(node, b)).ip;
  });
  after(async () => {
    await labDown(name);
    await rm(bundle, { force: true });
  });

  const socket = () => ['--agent-socket', node.agentSocket];
  const spool = () => ['--del-spool-dir', labLayout(name, 1).nodes[0]!.spoolDir];

  test('pods prints one row per pod with its address, ENI, host veth and phase', async () => {
    const r = await vpcnetctl(['pods', ...socket()]);
    assert.equal(r.code, 0, r.stderr);
    const rows = r.stdout.trimEnd().split('\n');
    assert.match(rows[0] ?? '', /^POD\s+CONTAINER\s+IF\s+ADDRESS\s+ENI\s+HOST VETH\s+PHASE\s+AGE$/);
    const state = await agentState(node);
    for (const [pod, short] of [
      [a, 'a'],
      [b, 'b'],
    ] as const) {
      const veth = state.attachments.find((x) => x.key.containerId === pod.containerId)?.hostVeth ?? '?';
      const row = rows.find((l) => l.startsWith(`default/${short} `));
      assert.ok(row, `no row for default/${short} in\n${r.stdout}`);
      assert.match(
        row,
        new RegExp(
          `${pod.containerId.slice(0, 12)}\\s+eth0\\s+${ips[short]}\\s+eni-\\w+\\s+${veth}\\s+ready\\s`,
        ),
      );
    }
  });

  test('status of the serving node exits 0 and shows its pool and both assigned addresses', async () => {
    const r = await vpcnetctl(['status', ...socket(), ...spool()]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /: HEALTHY$/m);
    assert.match(r.stdout, /^Pool: \d+ addresses: 2 assigned/m);
    assert.ok(
      r.stdout.includes(`${ips.a} (default/a)`) && r.stdout.includes(`${ips.b} (default/b)`),
      r.stdout,
    );
  });

  test('explain says the deleted host veth is missing (exit 1); the other pod is whole (exit 0)', async () => {
    const state = await agentState(node);
    const veth = state.attachments.find((x) => x.key.containerId === a.containerId)?.hostVeth;
    assert.ok(veth);
    await sh(['ip', '-n', node.netns, 'link', 'del', veth]);
    const broken = await vpcnetctl(['explain', 'default/a', ...socket()]);
    assert.equal(broken.code, 1, broken.stdout + broken.stderr);
    assert.match(broken.stdout, new RegExp(`host veth ${veth} missing`));
    assert.match(broken.stdout, /EC2: ENI eni-\w+ is attached to this instance/);
    const whole = await vpcnetctl(['explain', 'b', '-n', 'default', ...socket()]);
    assert.equal(whole.code, 0, whole.stdout);
    assert.match(whole.stdout, /everything recorded is in place/);
  });

  test('a failed ADD turns status degraded (exit 1) and explain shows the failure', async () => {
    const ghost: TestPod = {
      ...a,
      name: 'ghost',
      containerId: 'ghost0001',
      netnsPath: `/var/run/netns/${name}-ghost`,
    };
    assert.notEqual((await cni(node, 'ADD', ghost)).exitCode, 0);
    const status = await vpcnetctl(['status', ...socket(), ...spool()]);
    assert.equal(status.code, 1, status.stdout);
    assert.match(status.stdout, /^ {2}! 1 failed CNI operation\(s\).*ADD default\/ghost/m);
    const json = JSON.parse((await vpcnetctl(['status', '--json', ...socket(), ...spool()])).stdout) as {
      verdict: string;
    };
    assert.equal(json.verdict, 'degraded');
    const explain = await vpcnetctl(['explain', 'default/ghost', ...socket()]);
    assert.equal(explain.code, 1);
    assert.match(explain.stdout, /no record of default\/ghost/);
    assert.match(explain.stdout, /^\S+\s+ADD\s+ghost0001\s/m);
  });

  test('support-bundle writes one archive with state, ledger, dumps of the node and of each pod, logs', async () => {
    const layout = labLayout(name, 1).nodes[0]!;
    const r = await vpcnetctl(
      [
        'support-bundle',
        '-o',
        bundle,
        ...socket(),
        '--state-dir',
        layout.stateDir,
        ...spool(),
        '--cni-conf-dir',
        node.cniConfDir,
        '--logs',
        layout.agentLog,
      ],
      node.netns,
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^${bundle} \\(\\d`));
    const listing = (await sh(['tar', '-tzf', bundle])).split('\n').map((l) => l.replace(/^[^/]+\//, ''));
    for (const f of [
      'agent/state.json',
      'agent/status.txt',
      'agent/pods.txt',
      'ledger/ledger.json',
      'del-spool.txt',
      'cni-conf/10-vpcnet.conflist',
      'node/ip-link.json',
      'node/ip-route-all.json',
      'node/ip-rule.json',
      'node/ip-neigh.json',
      'node/nft-ruleset.txt',
      `pods/${name}-a/ip-link.txt`,
      `pods/${name}-b/ip-addr.txt`,
      `logs${layout.agentLog}`,
      'versions.txt',
      'errors.txt',
    ])
      assert.ok(listing.includes(f), `${f} not in the bundle:\n${listing.join('\n')}`);
    const nft = await sh(['tar', '-xzOf', bundle, '--wildcards', '*/node/nft-ruleset.txt']);
    assert.match(nft, /table ip vpcnet/, 'the node namespace ruleset, not the root one');
    const podLinks = await sh(['tar', '-xzOf', bundle, '--wildcards', `*/pods/${name}-b/ip-link.txt`]);
    assert.match(podLinks, /eth0@/);
  });

  test('health and health --live exit 0 and print nothing while the agent serves', async () => {
    for (const args of [['health'], ['health', '--live']]) {
      const r = await vpcnetctl([...args, ...socket()]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout + r.stderr, '');
    }
  });
});
