// The doctor against an in-process emulator (EC2, IMDS, STS, IAM, the Kubernetes slice) and node
// files in a scratch directory: a clean node has no finding and costs no mutating EC2 call, every
// action with DryRun is dry-run, the address actions go to IAM's simulator (or are named as not
// verifiable), an unknown instance type and node files (kubelet, NetworkManager, networkd) are
// judged as documented, and readiness is held on what the init step found.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import type { RunningEmulator } from '../../emulator/api.ts';
import { type Ec2ActionCount, mutatingCalls } from '../../emulator/ec2/call-counts.ts';
import { startEmulator } from '../../emulator/server.ts';
import { seededRandom } from '../../emulator/vpc/ids.ts';
import { runCli } from '../main.ts';
import { captureCli } from '../testing/cli-capture.ts';
import { recordedState, serveFakeAgent } from '../testing/fake-agent-socket.ts';
import { checkInstanceType } from './checks/cluster.ts';
import { checkNetworkd, checkNetworkManager } from './checks/node-files.ts';
import { type DoctorContext, doctorCloud, doctorImds, doctorKube, parseConfig } from './context.ts';
import { runDoctor } from './doctor.ts';
import { DRIVER_EC2_ACTIONS } from './ec2-actions.ts';
import { findingsFileOf } from './findings-file.ts';

let emulator: RunningEmulator;
let url: string;
let scratch: string;
let instanceId: string | undefined;
let primaryMac: string;

before(async () => {
  emulator = await startEmulator({
    vpc: {
      vpcId: 'vpc-0doctor',
      cidr: '10.2.0.0/16',
      region: 'us-west-2',
      subnets: [
        { subnetId: 'subnet-0doctora', cidr: '10.2.0.0/22', availabilityZone: 'us-west-2a' },
        { subnetId: 'subnet-0doctorb', cidr: '10.2.4.0/22', availabilityZone: 'us-west-2b' },
      ],
    },
    listen: [{ host: '127.0.0.1', port: 0 }],
    imdsFallbackInstance: () => instanceId,
    random: seededRandom(7),
  });
  url = emulator.urls[0]!;
  const launched = await emulator.launchInstance({
    instanceType: 't3.medium',
    subnetId: 'subnet-0doctora',
    nodeName: 'n1',
  });
  instanceId = launched.instanceId;
  primaryMac = launched.primaryEni.mac;
  scratch = await mkdtemp(join(tmpdir(), 'vpcnet-doctor-'));
  // The node's namespace as the doctor reads it: /proc/sys and /sys/class/net under given paths.
  for (const dev of ['all', 'eth0']) {
    await mkdir(join(scratch, 'proc-sys/net/ipv4/conf', dev), { recursive: true });
    await writeFile(join(scratch, 'proc-sys/net/ipv4/conf', dev, 'rp_filter'), '2\n');
  }
  await mkdir(join(scratch, 'sys/class/net/eth0'), { recursive: true });
  await writeFile(join(scratch, 'sys/class/net/eth0/address'), `${primaryMac}\n`);
  await mkdir(join(scratch, 'root'), { recursive: true });
});
after(async () => {
  await emulator.close();
  await rm(scratch, { recursive: true, force: true });
});

function nodeEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    AWS_ENDPOINT_URL_EC2: url,
    AWS_ENDPOINT_URL_STS: url,
    AWS_ENDPOINT_URL_IAM: url,
    AWS_EC2_METADATA_SERVICE_ENDPOINT: url,
    AWS_REGION: 'us-west-2',
    AWS_ACCESS_KEY_ID: 'AKIDNODE',
    AWS_SECRET_ACCESS_KEY: 'node',
    VPCNET_NODE_NAME: 'n1',
    VPCNET_KUBE_API: url,
    ...extra,
  };
}

const paths = () => ({
  nodeRoot: join(scratch, 'root'),
  procSys: join(scratch, 'proc-sys'),
  sys: join(scratch, 'sys'),
  modules: join(scratch, 'modules'),
  kernelRelease: '6.1.0-test',
});

async function admin(method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${url}${path}`, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return text === '' ? undefined : (JSON.parse(text) as unknown);
}

const calls = async () =>
  ((await admin('GET', '/admin/state')) as { ec2Calls: Record<string, Ec2ActionCount> }).ec2Calls;

test('a clean node: no finding, a dry run of every action that has one, not one mutating EC2 call', async () => {
  const before = await calls();
  const report = await runDoctor({
    env: nodeEnv({ ENABLE_POD_ENI: 'true', VPCNET_TRUNK_DRIVER: 'macvlan' }),
    paths: paths(),
  });
  assert.deepEqual(report.findings, [], JSON.stringify(report, null, 2));
  const afterwards = await calls();
  assert.equal(mutatingCalls(afterwards), mutatingCalls(before), 'no mutating call');
  for (const [action, entry] of Object.entries(DRIVER_EC2_ACTIONS)) {
    if (!entry.probe.dryRun) continue;
    const dry = (afterwards[action]?.dryRuns ?? 0) - (before[action]?.dryRuns ?? 0);
    assert.equal(dry, 1, `${action}: one dry run`);
  }
  assert.ok(
    report.passed.includes('ec2-permissions') && report.passed.includes('rp-filter'),
    report.passed.join(' '),
  );
  assert.ok(report.ms < 5000, `${report.ms} ms`);
});

test('in IPv6 mode the IPv6 address actions go to IAM’s simulator, which names the one denied', async () => {
  await admin('PUT', '/admin/iam-policy', {
    Statement: [
      { Effect: 'Allow', Action: ['ec2:*', 'iam:SimulatePrincipalPolicy'] },
      { Effect: 'Deny', Action: 'ec2:AssignIpv6Addresses' },
    ],
  });
  try {
    const report = await runDoctor({
      env: nodeEnv({ ENABLE_IPv6: 'true', ENABLE_PREFIX_DELEGATION: 'true' }),
      paths: paths(),
    });
    const denied = report.findings.filter((f) => f.check === 'ec2-permissions');
    assert.deepEqual(
      denied.map((f) => [f.severity, f.subject]),
      [['error', 'ec2:AssignIpv6Addresses']],
      JSON.stringify(report.findings, null, 2),
    );
    assert.match(denied[0]?.message ?? '', /IAM's policy simulator: explicitDeny/);
    assert.match(
      denied[0]?.fix ?? '',
      /^allow ec2:AssignIpv6Addresses in the policy of arn:aws:iam::111122223333:role\/vpcnet-node/,
    );
  } finally {
    await admin('PUT', '/admin/iam-policy', {});
  }
});

test('a role that may not simulate: the address actions are named as not verifiable ahead', async () => {
  await admin('PUT', '/admin/iam-policy', { Statement: [{ Effect: 'Allow', Action: 'ec2:*' }] });
  try {
    const report = await runDoctor({ env: nodeEnv(), paths: paths() });
    assert.deepEqual(
      report.findings.map((f) => [f.severity, f.check, f.subject]),
      [['warning', 'ec2-permissions', 'ec2:AssignPrivateIpAddresses, ec2:UnassignPrivateIpAddresses']],
    );
    assert.match(
      report.findings[0]?.message ?? '',
      /not verifiable ahead: .*may not call iam:SimulatePrincipalPolicy/,
    );
  } finally {
    await admin('PUT', '/admin/iam-policy', {});
  }
});

async function context(env: NodeJS.ProcessEnv): Promise<DoctorContext> {
  const found: DoctorContext['found'] = [];
  const config = parseConfig(env, found);
  const imds = doctorImds(env);
  const cloud = await doctorCloud(env, imds);
  return {
    env,
    config,
    paths: paths(),
    imds,
    cloud,
    facts: undefined,
    kube: doctorKube(config),
    found,
    skipped: [],
  };
}

test('an instance type EC2 does not describe is an error naming it', async () => {
  const ctx = await context(nodeEnv());
  const facts = {
    instanceId: instanceId ?? '',
    instanceType: 'x9.unknown',
    subnetId: 'subnet-0doctora',
    vpcId: 'vpc-0doctor',
    availabilityZone: 'us-west-2a',
    securityGroupIds: [],
    primaryEniId: 'eni-1',
    primaryAttachmentId: 'eni-attach-1',
  };
  await checkInstanceType({ ...ctx, facts });
  ctx.cloud?.clients.transport.close();
  assert.deepEqual(
    ctx.found.map((f) => [f.severity, f.subject]),
    [['error', 'x9.unknown']],
  );
  assert.match(ctx.found[0]?.message ?? '', /EC2 does not describe instance type x9\.unknown/);
});

async function onRoot(path: string, content: string): Promise<void> {
  const file = join(scratch, 'root', path);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, content);
}

test('node files: kubelet YAML, a networkd file narrowed by MAC, NetworkManager told to leave eth1+ alone', async () => {
  await onRoot('var/lib/kubelet/config.yaml', 'kind: KubeletConfiguration\nmaxPods: 40\n');
  await onRoot(
    'etc/systemd/network/10-primary.network',
    `[Match]\nMACAddress=${primaryMac}\n[Network]\nDHCP=yes\n`,
  );
  await onRoot(
    'etc/systemd/networkd.conf',
    '[Network]\nManageForeignRoutingPolicyRules=no\nManageForeignRoutes=no\n',
  );
  await onRoot('etc/NetworkManager/NetworkManager.conf', '[main]\nplugins=keyfile\n');
  await onRoot(
    'etc/NetworkManager/conf.d/99-vpcnet.conf',
    '[keyfile]\nunmanaged-devices=interface-name:eth*,except:interface-name:eth0\n',
  );
  try {
    const report = await runDoctor({ env: nodeEnv(), paths: paths() });
    const maxPods = report.findings.filter((f) => f.check === 'max-pods');
    assert.deepEqual(
      maxPods.map((f) => f.subject),
      ['/var/lib/kubelet/config.yaml'],
    );
    assert.match(
      maxPods[0]?.message ?? '',
      /kubelet admits up to 40 pods, but a t3\.medium addresses 17 in secondary-IP mode/,
    );
    assert.match(maxPods[0]?.fix ?? '', /^set maxPods: 17 in \/var\/lib\/kubelet\/config\.yaml/);
    assert.deepEqual(
      report.findings.filter((f) => f.check !== 'max-pods'),
      [],
    );
    // Custom networking leaves one ENI for pods fewer: 2 × 5 + 2.
    const custom = await context(nodeEnv({ AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG: 'true' }));
    await onRoot('var/lib/kubelet/config.yaml', 'maxPods: 17\n');
    await checkNetworkManager(custom);
    await checkNetworkd(custom);
    custom.cloud?.clients.transport.close();
    assert.deepEqual(custom.found, []);
  } finally {
    await rm(join(scratch, 'root'), { recursive: true, force: true });
    await mkdir(join(scratch, 'root'));
  }
});

test('readiness is held while the init step’s findings hold an error, naming it and its fix; liveness is not', async () => {
  const socket = join(scratch, 'agent.sock');
  const agent = await serveFakeAgent(socket, { healthz: 200, state: await recordedState('healthy-state') });
  try {
    const error = {
      check: 'ec2-permissions',
      severity: 'error',
      subject: 'ec2:CreateNetworkInterface',
      message: 'the node role may not call it',
      fix: 'allow it',
    };
    await writeFile(findingsFileOf(socket), JSON.stringify({ findings: [error] }));
    const ready = captureCli();
    assert.equal(await runCli(['health', '--agent-socket', socket], ready), 3);
    assert.match(
      ready.stderr(),
      /^vpcnet doctor at start \(.*doctor\.json\): ec2:CreateNetworkInterface: the node role may not call it; fix: allow it\n$/,
    );
    assert.equal(await runCli(['health', '--live', '--agent-socket', socket], captureCli()), 0);
    await writeFile(
      findingsFileOf(socket),
      JSON.stringify({ findings: [{ ...error, severity: 'warning' }] }),
    );
    assert.equal(
      await runCli(['health', '--agent-socket', socket], captureCli()),
      0,
      'warnings hold nothing',
    );
  } finally {
    await agent.close();
  }
});
