// `vpcnetctl doctor --lab` on a lab node: a clean lab has no finding; then misconfigurations are
// seeded (an IAM policy denying what the agent needs, kubelet's maxPods, rp_filter, NetworkManager
// and systemd-networkd files, an excluded subnet, a primary ENI kept at termination, kube-proxy in
// IPVS mode with pod ENIs, an aws-node setting, the vlan driver without 802.1q, IMDS turned off,
// STS out of reach, a missing ENIConfig, one in another zone with a group that does not exist, a
// setting that does not parse) and each run reports exactly those, each with its fix, within
// 5 s, without one mutating EC2 call. And the init step's findings hold the node's readiness.
import assert from 'node:assert/strict';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { DoctorReport } from '../../src/cli/doctor/finding.ts';
import { type Ec2ActionCount, mutatingCalls } from '../../src/emulator/ec2/call-counts.ts';
import { runProcess } from '../../src/infra/process.ts';
import { labLayout } from '../../src/lab/layout.ts';
import { unixJson } from '../../src/lab/unix-http.ts';
import {
  ctl,
  type LabDesc,
  labDown,
  labUp,
  repoRoot,
  sh,
  uniqueLabName,
  waitForQuietEc2,
} from '../lab-fixture.ts';

const ctlPath = join(repoRoot, 'bin', 'vpcnetctl');

describe('vpcnetctl doctor on a lab node', () => {
  const name = uniqueLabName('dr');
  let lab: LabDesc;
  let admin: string;
  let nodeRoot: string;
  let instanceId: string;
  let primaryEni: { eniId: string; attachmentId: string };
  let rpFilterBefore: string;

  before(async () => {
    await labDown(name);
    lab = await labUp(name);
    const layout = labLayout(name, 1);
    admin = layout.emulator.adminSocket;
    nodeRoot = layout.nodes[0]!.nodeRoot;
    const state = (await unixJson(admin, 'GET', '/admin/state')) as {
      instances: { instanceId: string }[];
      enis: { eniId: string; attachment: { deviceIndex: number; attachmentId: string } | null }[];
    };
    instanceId = state.instances[0]!.instanceId;
    const primary = state.enis.find((e) => e.attachment?.deviceIndex === 0)!;
    primaryEni = { eniId: primary.eniId, attachmentId: primary.attachment!.attachmentId };
    rpFilterBefore = (
      await sh(['ip', 'netns', 'exec', lab.nodes[0]!.netns, 'sysctl', '-n', 'net.ipv4.conf.all.rp_filter'])
    ).trim();
  });
  after(async () => {
    await labDown(name);
  });

  const calls = async () =>
    ((await unixJson(admin, 'GET', '/admin/state')) as { ec2Calls: Record<string, Ec2ActionCount> }).ec2Calls;

  /** One doctor run as a person runs it; asserts it took ≤ 5 s and made no mutating EC2 call. */
  async function doctor(
    env: Record<string, string> = {},
  ): Promise<{ report: DoctorReport; code: number; text: string }> {
    const before = mutatingCalls(await calls());
    const started = Date.now();
    const envArgs = Object.entries(env).flatMap(([k, v]) => ['--env', `${k}=${v}`]);
    const json = await runProcess([process.execPath, ctlPath, 'doctor', '--lab', name, '--json', ...envArgs]);
    const wall = Date.now() - started;
    assert.equal(mutatingCalls(await calls()), before, 'the doctor made no mutating EC2 call');
    const report = JSON.parse(json.stdout) as DoctorReport;
    assert.ok(
      report.ms <= 5000 && wall <= 5000,
      `the run took ${report.ms} ms (${wall} ms with vpcnetctl's start)`,
    );
    const human = await runProcess([process.execPath, ctlPath, 'doctor', '--lab', name, ...envArgs]);
    assert.equal(human.code, json.code);
    for (const f of report.findings) {
      assert.ok(f.fix.length > 0 && !f.fix.includes('\n'), `a one-line fix for ${f.check} ${f.subject}`);
      assert.ok(human.stdout.includes(`fix: ${f.fix}`), `the table shows the fix of ${f.subject}`);
    }
    return { report, code: json.code, text: human.stdout };
  }

  /** `lab subnet` of the nodes' own subnet (its tags). */
  const nodeSubnet = (...flags: string[]) =>
    ctl(['lab', 'subnet', '--name', name, '--subnet-id', 'subnet-0a1b0000000000001', ...flags]);

  const pairs = (r: DoctorReport) => r.findings.map((f) => `${f.severity} ${f.check} ${f.subject}`).sort();

  async function onNode(path: string, content: string): Promise<void> {
    const file = join(nodeRoot, path);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, content);
  }

  /** An EC2 call as an operator's tooling makes it (through the emulator's socket). */
  function ec2(params: Record<string, string>): Promise<number> {
    return new Promise((resolve, reject) => {
      const req = request({ socketPath: admin, path: '/', method: 'POST' }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end(new URLSearchParams({ Version: '2016-11-15', ...params }).toString());
    });
  }

  const deleteOnTermination = (value: boolean) =>
    ec2({
      Action: 'ModifyNetworkInterfaceAttribute',
      NetworkInterfaceId: primaryEni.eniId,
      'Attachment.AttachmentId': primaryEni.attachmentId,
      'Attachment.DeleteOnTermination': String(value),
    });

  test('a clean lab: no finding, exit 0', async () => {
    // The agent's own first top-ups come at the turns its pace draws: not the doctor's calls.
    await waitForQuietEc2(admin);
    const { report, code } = await doctor();
    assert.deepEqual(report.findings, []);
    assert.equal(code, 0);
  });

  test('round 1: permissions, node files, subnet tags, the primary ENI, kube-proxy, an aws-node setting, 8021q', async () => {
    const trunkDriver = (await readFile(labLayout(name, 1).files.trunkDriver, 'utf8')).trim();
    await unixJson(admin, 'PUT', '/admin/iam-policy', {
      Statement: [
        { Effect: 'Allow', Action: ['ec2:*', 'iam:SimulatePrincipalPolicy'] },
        {
          Effect: 'Deny',
          Action: ['ec2:CreateTags', 'ec2:DeleteNetworkInterface', 'ec2:AssignPrivateIpAddresses'],
        },
      ],
    });
    await onNode('etc/kubernetes/kubelet/config.json', '{"kind":"KubeletConfiguration","maxPods":110}\n');
    await onNode('etc/NetworkManager/NetworkManager.conf', '[main]\nplugins=keyfile\n');
    await onNode('etc/systemd/network/80-ec2.network', '[Match]\nName=eth*\n[Network]\nDHCP=yes\n');
    await sh(['ip', 'netns', 'exec', lab.nodes[0]!.netns, 'sysctl', '-qw', 'net.ipv4.conf.all.rp_filter=1']);
    await nodeSubnet('--tag', 'kubernetes.io/role/cni=0');
    assert.equal(await deleteOnTermination(false), 200);
    await unixJson(admin, 'POST', '/api/v1/namespaces/kube-system/configmaps', {
      metadata: { name: 'kube-proxy-config', namespace: 'kube-system' },
      data: { config: 'kind: KubeProxyConfiguration\nmode: "ipvs"\n' },
    });
    try {
      const { report, code } = await doctor({
        ENABLE_POD_ENI: 'true',
        VPCNET_TRUNK_DRIVER: 'vlan',
        AWS_VPC_K8S_CNI_LOGLEVEL: 'DEBUG',
      });
      const expected = [
        'error ec2-permissions ec2:CreateTags',
        'error ec2-permissions ec2:DeleteNetworkInterface',
        'error ec2-permissions ec2:AssignPrivateIpAddresses',
        'warning max-pods /etc/kubernetes/kubelet/config.json',
        'warning rp-filter net.ipv4.conf.all.rp_filter',
        'warning network-manager /etc/NetworkManager',
        'warning systemd-networkd /etc/systemd/network/80-ec2.network',
        'warning systemd-networkd /etc/systemd/networkd.conf',
        'error subnets us-west-2a',
        'warning subnets subnet-0a1b0000000000001',
        `warning eni-attachments ${primaryEni.eniId}`,
        'warning kube-proxy ConfigMap kube-system/kube-proxy-config',
        'warning configuration AWS_VPC_K8S_CNI_LOGLEVEL',
        // This kernel's 802.1q, as the lab probed it when it chose its trunk driver.
        ...(trunkDriver === 'vlan' ? [] : [`error vlan-module kernel ${await kernelRelease()}`]),
      ];
      assert.deepEqual(pairs(report), expected.sort(), JSON.stringify(report.findings, null, 2));
      assert.equal(code, 3);
      const byCheck = (c: string) => report.findings.find((f) => f.check === c);
      assert.match(
        byCheck('max-pods')?.fix ?? '',
        /^set maxPods: 17 in \/etc\/kubernetes\/kubelet\/config\.json/,
      );
      assert.match(
        byCheck('eni-attachments')?.fix ?? '',
        new RegExp(`--attachment AttachmentId=${primaryEni.attachmentId},DeleteOnTermination=true$`),
      );
    } finally {
      await unixJson(admin, 'PUT', '/admin/iam-policy', {});
      await rm(nodeRoot, { recursive: true, force: true });
      await sh([
        'ip',
        'netns',
        'exec',
        lab.nodes[0]!.netns,
        'sysctl',
        '-qw',
        `net.ipv4.conf.all.rp_filter=${rpFilterBefore}`,
      ]);
      await nodeSubnet('--untag', 'kubernetes.io/role/cni');
      await deleteOnTermination(true);
      await unixJson(admin, 'DELETE', '/api/v1/namespaces/kube-system/configmaps/kube-proxy-config');
    }
    assert.deepEqual((await doctor()).report.findings, [], 'clean again once undone');
  });

  test('round 2: IMDS turned off for the instance, STS out of reach', async () => {
    await unixJson(admin, 'POST', `/admin/instances/${instanceId}/metadata-options`, {
      httpEndpoint: 'disabled',
    });
    try {
      const { report } = await doctor({ AWS_ENDPOINT_URL_STS: 'http://10.0.255.254:9' });
      assert.deepEqual(pairs(report), [
        'error imds http://169.254.169.254',
        'warning ec2-permissions ec2:AssignPrivateIpAddresses, ec2:UnassignPrivateIpAddresses',
        'warning endpoints http://10.0.255.254:9',
      ]);
      const imds = report.findings.find((f) => f.check === 'imds');
      assert.equal(
        imds?.fix,
        `turn the instance's metadata endpoint on: aws ec2 modify-instance-metadata-options --instance-id ${instanceId} --http-endpoint enabled`,
      );
    } finally {
      await unixJson(admin, 'POST', `/admin/instances/${instanceId}/metadata-options`, {
        httpEndpoint: 'enabled',
      });
    }
  });

  test('round 3: custom networking with no ENIConfig for the node, then one in another zone with a missing group', async () => {
    const custom = { AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG: 'true' };
    const missing = await doctor(custom);
    assert.deepEqual(pairs(missing.report), ['error eni-config node node1']);
    assert.match(missing.report.findings[0]?.message ?? '', /ENIConfig default .* does not exist/);
    await ctl([
      'lab',
      'subnet',
      '--name',
      name,
      '--subnet-id',
      'subnet-0doctorzoneb',
      '--cidr',
      '10.0.64.0/20',
      '--zone',
      'us-west-2b',
    ]);
    await ctl([
      'lab',
      'eni-config',
      '--name',
      name,
      '--eni-config',
      'default',
      '--subnet',
      'subnet-0doctorzoneb',
      '--security-groups',
      'sg-0d0e5n0texist',
    ]);
    const wrong = await doctor(custom);
    assert.deepEqual(pairs(wrong.report), [
      'error eni-config ENIConfig default',
      'error eni-config ENIConfig default',
    ]);
    const messages = wrong.report.findings.map((f) => f.message).join('\n');
    assert.match(messages, /is in zone us-west-2b, the node in us-west-2a/);
    assert.match(messages, /sg-0d0e5n0texist' does not exist/);
  });

  test('round 4: a setting the agent would refuse; the init step’s findings hold readiness with it', async () => {
    const { report, code } = await doctor({ WARM_IP_TARGET: 'lots' });
    assert.deepEqual(pairs(report), ['error configuration WARM_IP_TARGET']);
    assert.equal(code, 3);
    const findingsFile = join(dirname(lab.nodes[0]!.agentSocket), 'doctor.json');
    const run = await runProcess([
      process.execPath,
      ctlPath,
      'doctor',
      '--lab',
      name,
      '--env',
      'WARM_IP_TARGET=lots',
      '--write-findings',
      findingsFile,
    ]);
    assert.equal(run.code, 3);
    try {
      const held = await runProcess([process.execPath, ctlPath, 'health', '--lab', name]);
      assert.equal(held.code, 3);
      assert.match(
        held.stderr,
        /^vpcnet doctor at start \(.*doctor\.json\): WARM_IP_TARGET: the agent would refuse to start: .*; fix: correct WARM_IP_TARGET/,
      );
    } finally {
      await rm(findingsFile, { force: true });
    }
    assert.equal((await runProcess([process.execPath, ctlPath, 'health', '--lab', name])).code, 0);
  });
});

async function kernelRelease(): Promise<string> {
  return (await sh(['uname', '-r'])).trim();
}
