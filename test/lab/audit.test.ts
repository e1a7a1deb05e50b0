// `vpcnetctl audit --lab` on a 5-node lab: clean, it finds nothing; with 8 classes of fault
// injected twice each (an address EC2 assigns that no ledger owns, a record whose pod is gone, one
// address on two nodes, a pod IP in the API that differs from the ledger, a detached vpcnet ENI,
// ENIs serving from a subnet tagged to drain, a branch ENI whose annotation and EC2 disagree, a
// held address EC2 no longer assigns) it finds exactly those 16, on a quiet lab and while node4 and
// node5 churn pods (a live storm: sandboxes made, replaced, deleted and force-deleted, statuses
// written late, EC2 throttling and lagging describes; the churn one read catches is discounted by
// the second), within ⌈ENIs/1000⌉ + subnets EC2 calls per quiet run. Then --repair from the saved
// report gives back the unowned addresses and deletes the detached ENIs, and nothing else; the same
// audit as run against a cluster (the API read by kubectl with a kubeconfig, each agent by kubectl
// exec into its DaemonSet pod, which the emulated API runs in the pod's node), and as `kubectl
// vpcnet` with the plugin alone on PATH, finds the rest.
// Test turn: shared (it waits on its own lab's agents and timers; no CPU or latency bound).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { chmod, copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AuditReport } from '../../src/cli/audit/audit.ts';
import { kubeconfigFor } from '../../src/emulator/testing/kubeconfig.ts';
import { cidrContains, parseCidr, parseIpv4 } from '../../src/infra/ipv4.ts';
import { runProcess } from '../../src/infra/process.ts';
import { labLayout } from '../../src/lab/layout.ts';
import { unixJson } from '../../src/lab/unix-http.ts';
import { type Sandbox, type StormPod, StormRuntime } from '../../src/storm/runtime.ts';
import {
  addPod,
  agentState,
  ctl,
  ctlAnyExit,
  dropPod,
  emulatorState,
  type LabDesc,
  labDown,
  labUp,
  newPod,
  registerPod,
  registerSgPod,
  repoRoot,
  type TestPod,
  uniqueLabName,
  waitForQuietEc2,
  waitForTrunk,
} from '../lab-fixture.ts';

const ctlPath = join(repoRoot, 'bin', 'vpcnetctl');
const DRAIN_SUBNET = { id: 'subnet-0aud17d7a1n00001', cidr: '10.0.64.0/20' };

describe('vpcnetctl audit on a 5-node lab, quiet and during a live storm', () => {
  const name = uniqueLabName('au');
  const report = `/tmp/${name}-audit.json`;
  let lab: LabDesc;
  let admin: string;
  const expected = new Set<string>();
  const pods = new Map<string, TestPod & { ip: string }>();

  before(async () => {
    await labDown(name);
    lab = await labUp(name, [
      '--nodes',
      '5',
      '--instance-type',
      'm5.large',
      '--pod-eni',
      // The agents' own EC2 sync would adopt or drop what is injected: not within this test.
      '--agent-env',
      'VPCNET_EC2_SYNC_SECONDS=3600',
      // ENIs only as pods need them, so that a node's second ENI is one the test can place.
      '--agent-env',
      'WARM_ENI_TARGET=0',
      '--agent-env',
      'WARM_IP_TARGET=2',
    ]);
    admin = labLayout(name, 5).emulator.adminSocket;
  });
  after(async () => {
    await labDown(name);
    await rm(report, { force: true });
  });

  const node = (k: number) => lab.nodes[k - 1]!;

  async function audit(extra: string[] = []): Promise<{ report: AuditReport; code: number; stdout: string }> {
    const r = await runProcess(
      [process.execPath, ctlPath, 'audit', '--lab', name, '--json', '--interval', '3', ...extra],
      {
        timeoutMs: 120_000,
      },
    );
    assert.ok(r.code !== 4 && r.code !== 2, `audit failed (${r.code}): ${r.stderr}`);
    return { report: JSON.parse(r.stdout) as AuditReport, code: r.code, stdout: r.stdout };
  }

  /** EC2's budget for one run: a page of 1000 ENIs, and one call per subnet. */
  const budget = (r: AuditReport) => Math.ceil(r.enis / 1000) + r.subnets.length;

  async function addTestPod(k: number, short: string): Promise<TestPod & { ip: string }> {
    const pod = await newPod(name, short, { uid: `uid-${short}-${randomBytes(3).toString('hex')}` });
    await registerPod(name, node(k).name, pod.namespace, pod.name, pod.uid ?? '');
    const { ip } = await addPod(node(k), pod);
    const held = { ...pod, ip };
    pods.set(short, held);
    return held;
  }

  function ec2(params: Record<string, string>): Promise<string> {
    return new Promise((resolve, reject) => {
      const req = request({ socketPath: admin, path: '/', method: 'POST' }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(body)
            : reject(new Error(`${params.Action}: ${res.statusCode} ${body}`)),
        );
      });
      req.on('error', reject);
      req.end(new URLSearchParams({ Version: '2016-11-15', ...params }).toString());
    });
  }

  async function instanceOf(k: number): Promise<string> {
    return ((await agentState(node(k))) as unknown as { instanceId: string }).instanceId;
  }

  /** `lab subnet` of the second subnet (added, tagged, untagged). */
  const drainSubnet = (...flags: string[]) =>
    ctl(['lab', 'subnet', '--name', name, '--subnet-id', DRAIN_SUBNET.id, ...flags]);

  const inDrainSubnet = (ip: string) => cidrContains(parseCidr(DRAIN_SUBNET.cidr), parseIpv4(ip));

  test('clean: no finding, exit 0, within the EC2 budget', async () => {
    await waitForQuietEc2(admin);
    const { report: r, code, stdout } = await audit();
    assert.match(stdout, /^\{\n {2}"findings": \[/, 'the findings first');
    assert.deepEqual(r.findings, [], JSON.stringify(r.findings, null, 2));
    assert.equal(code, 0);
    assert.equal(r.nodes.length, 5);
    assert.ok(r.ec2Calls <= budget(r), `${r.ec2Calls} EC2 calls, budget ${budget(r)}`);
    assert.deepEqual(
      r.subnets.map((s) => s.subnetId),
      ['subnet-0a1b0000000000001'],
    );
    assert.ok(r.subnets[0]!.free28s > 200 && r.subnets[0]!.freeAddresses > 4000, JSON.stringify(r.subnets));
  });

  test('16 faults of 8 classes, injected twice each, are found exactly: no more, no less', async () => {
    // Pods whose ENIs grow into a second subnet on node2 and node3 (offered while they fill), for
    // the ENIs that will serve from a subnet tagged to drain.
    await drainSubnet('--cidr', DRAIN_SUBNET.cidr, '--tag', 'kubernetes.io/role/cni=1');
    for (const k of [2, 3]) {
      let onSecond: string | undefined;
      const seen: string[] = [];
      for (let i = 1; i <= 14 && onSecond === undefined; i++) {
        const p = await addTestPod(k, `n${k}d${i}`);
        seen.push(p.ip);
        if (inDrainSubnet(p.ip)) onSecond = p.ip;
      }
      if (onSecond === undefined) {
        const st = await ctlAnyExit(['state', '--lab', name, '--node', String(k), '--json']);
        assert.fail(
          `node${k} got no address of ${DRAIN_SUBNET.id}: ${seen.join(' ')}\n${st.stdout.slice(0, 6000)}`,
        );
      }
    }
    await drainSubnet('--untag', 'kubernetes.io/role/cni');
    for (const k of [1, 2])
      for (const short of ['gone', 'moved', 'wrongip', 'lost']) await addTestPod(k, `n${k}${short}`);
    for (const k of [1, 2]) await waitForTrunk(name, node(k).name);
    const branches = new Map<number, string>();
    for (const k of [1, 2]) {
      const pod = await newPod(name, `n${k}sg`, { uid: `uid-n${k}sg` });
      await registerSgPod(name, node(k).name, pod.namespace, pod.name, pod.uid ?? '');
      await addPod(node(k), pod);
      branches.set(k, pod.name);
    }
    const clean = await audit();
    assert.deepEqual(clean.report.findings, [], 'clean before the injections');

    const instances = new Map(
      await Promise.all([1, 2, 3, 4, 5].map(async (k) => [k, await instanceOf(k)] as const)),
    );
    // Top-ups ask for what pods take over the next token's wait, and that surplus goes back once
    // the pods stop coming (30 s): wait for it, so that the ENIs have room for what is injected.
    const roomyIn = (state: Awaited<ReturnType<typeof emulatorState>>) =>
      state.enis
        .filter(
          (e) =>
            e.interfaceType === 'interface' &&
            e.secondaryIps.length < 8 &&
            [1, 2, 3].some((n) => e.attachment?.instanceId === instances.get(n)),
        )
        .map((e) => e.eniId);
    let truth = await emulatorState(name);
    for (let waited = 0; roomyIn(truth).length < 3 && waited < 90_000; waited += 1_000) {
      await new Promise((r) => setTimeout(r, 1_000));
      truth = await emulatorState(name);
    }
    // Where a moved address goes: an ENI of another node in the address's subnet, with room.
    const moveTarget = (from: number, subnetId: string) =>
      truth.enis.find(
        (e) =>
          e.subnetId === subnetId &&
          e.interfaceType === 'interface' &&
          e.attachment !== null &&
          e.attachment.instanceId !== instances.get(from) &&
          e.secondaryIps.length < 8,
      )!.eniId;
    const roomy = roomyIn(truth);
    assert.ok(roomy.length >= 2, `two pool ENIs with room for an injected address: ${roomy.join(', ')}`);
    for (const k of [1, 2]) {
      const instance = await instanceOf(k);
      // unowned-address: one more secondary IP on a pool ENI, outside vpcnet.
      const target = roomy[k - 1]!;
      const before = truth.enis.find((e) => e.eniId === target)!.secondaryIps;
      const added = (await unixJson(admin, 'POST', `/admin/enis/${target}/addresses`, {
        secondaryIpCount: 1,
      })) as { secondaryIps: string[] };
      const extra = added.secondaryIps.find((ip) => !before.includes(ip));
      assert.ok(extra);
      expected.add(`unowned-address ${target} ${extra}`);
      // record-pod-gone: the pod leaves the API without a DEL (its sandbox stays).
      const gone = pods.get(`n${k}gone`)!;
      const goneState = await agentState(node(k));
      await dropPod(name, gone.namespace, gone.name);
      assert.ok(goneState.attachments.some((a) => a.key.containerId === gone.containerId));
      expected.add(`record-pod-gone ${node(k).name} ${gone.containerId} eth0`);
      // address-on-two-nodes: the pod's address moved in EC2 to another node's ENI.
      const moved = pods.get(`n${k}moved`)!;
      const movedFrom = truth.enis.find((e) => e.secondaryIps.includes(moved.ip))!;
      await unixJson(admin, 'DELETE', `/admin/enis/${movedFrom.eniId}/addresses`, { ips: [moved.ip] });
      await unixJson(admin, 'POST', `/admin/enis/${moveTarget(k, movedFrom.subnetId)}/addresses`, {
        ips: [moved.ip],
      });
      expected.add(`address-on-two-nodes ${moved.ip}`);
      // pod-ip-mismatch: the pod's status in the API names another address.
      const wrong = pods.get(`n${k}wrongip`)!;
      await unixJson(admin, 'PATCH', `/api/v1/namespaces/${wrong.namespace}/pods/${wrong.name}`, {
        status: { podIP: `10.0.99.${k}`, podIPs: [{ ip: `10.0.99.${k}` }] },
      });
      expected.add(`pod-ip-mismatch ${wrong.namespace}/${wrong.name} status`);
      // detached-eni: vpcnet's, made for the node an hour ago and never attached (a crash between create and attach).
      const created = await ec2({
        Action: 'CreateNetworkInterface',
        SubnetId: 'subnet-0a1b0000000000001',
        Description: `vpcnet: node ${instance}`,
        'TagSpecification.1.ResourceType': 'network-interface',
        'TagSpecification.1.Tag.1.Key': 'vpcnet.io/created-by',
        'TagSpecification.1.Tag.1.Value': 'vpcnet',
        'TagSpecification.1.Tag.2.Key': 'node.k8s.amazonaws.com/instance_id',
        'TagSpecification.1.Tag.2.Value': instance,
        'TagSpecification.1.Tag.3.Key': 'node.k8s.amazonaws.com/createdAt',
        'TagSpecification.1.Tag.3.Value': new Date(Date.now() - 3_600_000)
          .toISOString()
          .replace(/\.\d+Z$/, 'Z'),
      });
      const detached = /<networkInterfaceId>(eni-[0-9a-f]+)<\/networkInterfaceId>/.exec(created)?.[1];
      assert.ok(detached);
      expected.add(`detached-eni ${detached}`);
      // branch-mismatch: the pod's annotation names a branch ENI EC2 does not have.
      const sg = branches.get(k)!;
      const fake = `eni-0badbadbadbad000${k}`;
      await unixJson(admin, 'PATCH', `/api/v1/namespaces/default/pods/${sg}`, {
        metadata: {
          annotations: {
            'vpc.amazonaws.com/pod-eni': JSON.stringify([
              {
                eniId: fake,
                privateIp: `10.0.98.${k}`,
                vlanId: 1,
                ifAddress: `0a:00:00:00:00:0${String(k)}`,
                subnetCidr: '10.0.0.0/20',
              },
            ]),
          },
        },
      });
      expected.add(`branch-mismatch default/${sg} ${fake}`);
      // held-address-missing: the pod's address taken off its ENI outside vpcnet.
      const lost = pods.get(`n${k}lost`)!;
      const lostEni = truth.enis.find((e) => e.secondaryIps.includes(lost.ip))!.eniId;
      await unixJson(admin, 'DELETE', `/admin/enis/${lostEni}/addresses`, { ips: [lost.ip] });
      expected.add(`held-address-missing ${node(k).name} ${lost.ip}`);
    }
    // draining-subnet-eni: the second subnet tagged to drain while node2's and node3's ENIs there serve pods.
    await drainSubnet('--tag', 'kubernetes.io/role/cni=0');
    const now = await emulatorState(name);
    for (const k of [2, 3]) {
      const instance = await instanceOf(k);
      const drained = now.enis.find(
        (e) => e.subnetId === DRAIN_SUBNET.id && e.attachment?.instanceId === instance,
      );
      assert.ok(drained, `node${k} has an ENI in ${DRAIN_SUBNET.id}`);
      expected.add(`draining-subnet-eni ${drained.eniId}`);
    }
    assert.equal(expected.size, 16);

    const { report: r, code, stdout } = await audit();
    assert.deepEqual(
      r.findings.map((f) => f.key).sort(),
      [...expected].sort(),
      JSON.stringify(r.findings, null, 2),
    );
    assert.equal(code, 3, 'a critical finding: exit 3');
    assert.equal(r.reads, 2);
    assert.ok(
      r.ec2Calls <= budget(r),
      `${r.ec2Calls} EC2 calls, budget ${budget(r)} (${r.enis} ENIs, ${r.subnets.length} subnets)`,
    );
    for (const f of r.findings) {
      assert.ok(f.node !== undefined || f.eniId !== undefined, `${f.key} names what it concerns`);
      assert.ok(f.fix.length > 0 && f.message.length > 0);
    }
    await writeFile(report, stdout);
    const human = await runProcess([process.execPath, ctlPath, 'audit', '--lab', name, '--interval', '3']);
    assert.equal(human.code, 3);
    assert.match(human.stdout, /^CRITICAL address-on-two-nodes /m);
    assert.match(
      human.stdout,
      /^audited 5 node\(s\), \d+ pod\(s\), \d+ ENI\(s\) of vpc-\w+ in 2 read\(s\), \d+ EC2 call\(s\), [\d.]+ s: 16 finding\(s\), 4 critical/m,
    );
  });

  test('during a live storm on node4 and node5, under throttling and lagging describes, the same 16 and nothing else', async (t) => {
    assert.equal(expected.size, 16, 'the injections ran');
    const stop = { now: false };
    const storms = [4, 5].map((k) => churn(name, node(k), admin, stop));
    try {
      await sleep(3000);
      await unixJson(admin, 'PUT', '/admin/faults', { throttleRate: 0.1, staleReadMs: 2000 });
      let churnSeen = 0;
      // Two rounds at least; more (up to six) until one read has caught the churn in the act.
      for (let round = 0; round < 6 && (round < 2 || churnSeen === 0); round++) {
        const { report: r } = await audit();
        churnSeen += r.unconfirmed;
        assert.deepEqual(
          r.findings.map((f) => f.key).sort(),
          [...expected].sort(),
          `round ${round}: ${JSON.stringify(r.findings, null, 2)}`,
        );
        // The figures for the record: what churn showed in one read only, and the EC2 calls
        // (throttled attempts included) against the quiet budget.
        t.diagnostic(
          `round ${round}: ${r.findings.length} findings, ${r.unconfirmed} seen once (churn), ${r.ec2Calls} EC2 calls (quiet budget ${budget(r)}), ${r.ms} ms`,
        );
      }
      assert.ok(churnSeen > 0, 'the storm made differences one read showed and the second did not');
    } finally {
      await unixJson(admin, 'PUT', '/admin/faults', {});
      stop.now = true;
      const churned = await Promise.all(storms);
      assert.ok(
        churned.every((n) => n >= 3),
        `the storm ran: ${churned.join(', ')} pods per node`,
      );
    }
  });

  test('--repair from the saved report gives the unowned addresses back and deletes the detached ENIs, and nothing else', async () => {
    const r = await runProcess([
      process.execPath,
      ctlPath,
      'audit',
      '--lab',
      name,
      '--repair',
      '--from-report',
      report,
      '--json',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const repairs = (JSON.parse(r.stdout) as { repairs: { key: string; action: string }[] }).repairs;
    const done = repairs
      .filter((x) => x.action === 'repaired')
      .map((x) => x.key)
      .sort();
    assert.deepEqual(
      done,
      [...expected].filter((k) => k.startsWith('unowned-address') || k.startsWith('detached-eni')).sort(),
    );
    assert.ok(repairs.filter((x) => x.action === 'skipped').length === 12);
    const after = await audit();
    assert.deepEqual(
      after.report.findings.map((f) => f.key).sort(),
      [...expected].filter((k) => !k.startsWith('unowned-address') && !k.startsWith('detached-eni')).sort(),
    );
  });

  /** Runs `argv` in the lab's VPC namespace as a machine outside the cluster would: a kubeconfig and kubectl. */
  async function asOutsider(argv: string[]): Promise<Awaited<ReturnType<typeof runProcess>>> {
    const layout = labLayout(name, 5);
    const home = await mkdtemp(join(tmpdir(), 'audit-kubeconfig-'));
    const kubeconfig = join(home, 'kubeconfig');
    await writeFile(kubeconfig, kubeconfigFor(layout.emulator.kubeEndpoint));
    try {
      return await runProcess(['ip', 'netns', 'exec', layout.vpcNetns, ...argv], {
        timeoutMs: 120_000,
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          // kubectl's discovery cache goes under HOME: the test's own, not the machine's.
          HOME: home,
          KUBECONFIG: kubeconfig,
          AWS_ACCESS_KEY_ID: 'lab-audit',
          AWS_SECRET_ACCESS_KEY: 'lab',
          AWS_EC2_METADATA_DISABLED: 'true',
        },
      });
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  }

  test('as against a cluster: the API through kubectl, every agent through kubectl exec into its DaemonSet pod, the same findings', async () => {
    const layout = labLayout(name, 5);
    const r = await asOutsider([
      process.execPath,
      ctlPath,
      'audit',
      '--json',
      '--interval',
      '3',
      '--kubectl',
      'kubectl',
      '--region',
      layout.vpc.region,
      '--ec2-endpoint',
      layout.emulator.ec2Endpoint,
    ]);
    assert.equal(r.code, 3, r.stderr);
    const report = JSON.parse(r.stdout) as AuditReport;
    // An agent kubectl exec could not read would be an agent-unreachable finding, not silence.
    assert.deepEqual(
      report.findings.map((f) => f.key).sort(),
      [...expected].filter((k) => !k.startsWith('unowned-address') && !k.startsWith('detached-eni')).sort(),
    );
    assert.equal(report.nodes.length, 5);
  });

  test("kubectl exec into a DaemonSet pod reads that node's agent, and exits with the exit code of what it ran", async () => {
    const execIn = (pod: string, command: string[], container = ['-c', 'vpcnet']) =>
      asOutsider(['kubectl', 'exec', '-n', 'kube-system', pod, ...container, '--', ...command]);
    const state = await execIn('vpcnet-node3', ['/opt/vpcnet/bin/vpcnetctl', 'state', '--json']);
    assert.equal(state.code, 0, state.stderr);
    const read = JSON.parse(state.stdout) as { instanceId: string };
    assert.equal(read.instanceId, await instanceOf(3), "node3's agent, through its pod");
    // A usage error of vpcnetctl is its exit 2; kubectl exits with it, as with a cluster's pod.
    const failing = await execIn('vpcnet-node1', ['/opt/vpcnet/bin/vpcnetctl', 'state', '--no-such-flag']);
    assert.equal(failing.code, 2, failing.stderr);
    assert.match(failing.stderr, /--no-such-flag/);
    const outside = await execIn('vpcnet-node1', ['/bin/sh', '-c', 'id'], []);
    assert.equal(outside.code, 1);
    assert.match(outside.stderr, /only the image's programs in \/opt\/vpcnet\/bin\/ do/);
  });

  test('kubectl vpcnet is the same command: kubectl finds the plugin on PATH, alone, and it audits the lab', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kubectl-plugin-'));
    try {
      await copyFile(join(repoRoot, 'bin', 'kubectl-vpcnet'), join(dir, 'kubectl-vpcnet'));
      await chmod(join(dir, 'kubectl-vpcnet'), 0o755);
      const env = { PATH: `${dir}:${dirname(process.execPath)}:${process.env.PATH ?? '/usr/bin:/bin'}` };
      const help = await runProcess(['kubectl', 'vpcnet', 'audit', '--help'], { env });
      assert.equal(help.code, 0, help.stderr);
      assert.match(help.stdout, /^Usage: vpcnetctl audit /);
      const r = await runProcess(['kubectl', 'vpcnet', 'audit', '--lab', name, '--json', '--interval', '3'], {
        env,
        timeoutMs: 120_000,
      });
      assert.equal(r.code, 3, r.stderr);
      assert.deepEqual(
        (JSON.parse(r.stdout) as AuditReport).findings.map((f) => f.key).sort(),
        [...expected].filter((k) => !k.startsWith('unowned-address') && !k.startsWith('detached-eni')).sort(),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/**
 * A storm's worth of pod churn on one node until `stop.now`, with the orderings a cluster has:
 * pods registered and their sandboxes added through the plugin chain, the pod's status then
 * written (as the kubelet does, a moment after the ADD); some sandboxes replaced (the old one's DEL
 * late); pods deleted either as the kubelet does (DEL, then the API object) or force-deleted (the
 * API object first, the DEL 1.5 s later). Each ordering leaves a moment where the ledger and the
 * API disagree: what the audit's second read must discount. Returns how many pods it made.
 */
async function churn(
  lab: string,
  n: LabDesc['nodes'][number],
  adminSocket: string,
  stop: { now: boolean },
): Promise<number> {
  const runtime = new StormRuntime(
    { name: lab, node: n, adminSocket, pidsDir: labLayout(lab, 0).files.pidsDir },
    () => undefined,
  );
  const reportIp = (pod: StormPod, ip: string) =>
    unixJson(adminSocket, 'PATCH', `/api/v1/namespaces/default/pods/${pod.name}`, {
      status: { podIP: ip, podIPs: [{ ip }] },
    });
  const live: { pod: StormPod; sb: Sandbox }[] = [];
  let made = 0;
  let k = 0;
  while (!stop.now) {
    k++;
    const pod: StormPod = { name: `${n.name}-churn-${k}`, uid: `churn-${n.name}-${k}`, sg: false };
    await runtime.registerPod(pod);
    const sb = await runtime.newSandbox(pod);
    await reportIp(pod, await runtime.add(pod, sb));
    made++;
    live.push({ pod, sb });
    if (k % 3 === 0) {
      // A replaced sandbox: the new one's ADD, its status, then the old one's DEL.
      const old = live.pop()!;
      const next = await runtime.newSandbox(old.pod);
      await reportIp(old.pod, await runtime.add(old.pod, next));
      await runtime.del(old.pod, old.sb, old.sb.netnsPath);
      await runtime.removeNetns(old.sb);
      live.push({ pod: old.pod, sb: next });
    }
    if (live.length > 4) {
      const gone = live.shift()!;
      if (k % 2 === 0) {
        await runtime.del(gone.pod, gone.sb, gone.sb.netnsPath);
        await runtime.deletePod(gone.pod);
      } else {
        await runtime.deletePod(gone.pod);
        await sleep(1500);
        await runtime.del(gone.pod, gone.sb, gone.sb.netnsPath);
      }
      await runtime.removeNetns(gone.sb);
    }
  }
  for (const { pod, sb } of live) {
    await runtime.del(pod, sb, sb.netnsPath);
    await runtime.deletePod(pod);
    await runtime.removeNetns(sb);
  }
  return made;
}
