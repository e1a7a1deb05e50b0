// The audit of 1,000 simulated nodes (2,000 ENIs, 14,000 pooled addresses, 5,000 pods) against the
// emulator's EC2 through the production Query client: the VPC's ENIs in ⌈ENIs/1000⌉ pages, the
// subnets in one call, one more describe to confirm; the three faults injected found and nothing
// else; the whole run timed. The agents' states come from their socket reads here (scripted): what
// reading them costs in a cluster (kubectl exec, 16 at a time) is not in this figure.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createAwsClients } from '../../cloud/aws/create-aws-cloud.ts';
import type { RunningEmulator } from '../../emulator/api.ts';
import { startEmulator } from '../../emulator/server.ts';
import { seededRandom } from '../../emulator/vpc/ids.ts';
import { type EmulatorAdmin, ec2CallCounts, emulatorAdmin } from '../testing/emulator-admin.ts';
import { fixedKube } from '../testing/fixed-kube.ts';
import { scriptedAgents } from '../testing/scripted-agents.ts';
import { runAudit } from './audit.ts';
import { countedEc2 } from './sources.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

const NODES = 1000;
const PODS_PER_NODE = 5;
const VPC_ID = 'vpc-0scale';
const SUBNET = 'subnet-0scale';

interface Eni {
  readonly eniId: string;
  readonly primaryIp: string;
  readonly secondaryIps: readonly string[];
}

let emulator: RunningEmulator;
let admin: EmulatorAdmin;

before(async () => {
  emulator = await startEmulator({
    vpc: {
      vpcId: VPC_ID,
      cidr: '10.3.0.0/16',
      region: 'us-west-2',
      subnets: [{ subnetId: SUBNET, cidr: '10.3.0.0/17', availabilityZone: 'us-west-2a' }],
    },
    listen: [{ host: '127.0.0.1', port: 0 }],
    random: seededRandom(3),
  });
  admin = emulatorAdmin(emulator.urls[0]!);
});
after(() => emulator.close());

/** A node's agent state: both ENIs pooled, its first pods holding the second ENI's first addresses. */
function agentState(instanceId: string, enis: readonly Eni[], pods: readonly string[]) {
  const holder = enis[1]!;
  return {
    instanceId,
    vpcId: VPC_ID,
    pool: {
      enis: enis.map((e) => ({
        eniId: e.eniId,
        addresses: Object.fromEntries(e.secondaryIps.map((ip) => [ip, { kind: 'free' }])),
      })),
    },
    attachments: pods.map((name, k) => ({
      key: { network: 'vpcnet', containerId: `c-${name}`, ifName: 'eth0' },
      pod: { namespace: 'default', name, uid: `u-${name}` },
      ip: holder.secondaryIps[k],
      eniId: holder.eniId,
      phase: 'ready',
    })),
    bindings: [],
  };
}

test(`${NODES} simulated nodes: three faults found and nothing else, in ⌈ENIs/1000⌉ + 2 EC2 calls`, async (t) => {
  const states: Record<string, unknown[]> = {};
  const podItems: unknown[] = [];
  let leaked = '';
  let goneRecord = '';
  let firstPrimary = '';
  for (let n = 0; n < NODES; n++) {
    const node = `node${n}`;
    const instance = await emulator.launchInstance({
      instanceType: 'm5.large',
      subnetId: SUBNET,
      securityGroupIds: ['sg-1'],
    });
    const primary = (await admin('POST', `/admin/enis/${instance.primaryEni.eniId}/addresses`, {
      secondaryIpCount: 4,
    })) as Eni;
    const second = (await admin('POST', `/admin/instances/${instance.instanceId}/enis`, {
      secondaryIpCount: 9,
    })) as Eni;
    const pods = Array.from({ length: PODS_PER_NODE }, (_, k) => `p-${n}-${k}`);
    states[node] = [agentState(instance.instanceId, [primary, second], pods)];
    // Fault: the last pod of node7 is gone from the API, its record stays.
    for (const [k, name] of pods.entries()) {
      if (n === 7 && k === PODS_PER_NODE - 1) {
        goneRecord = `record-pod-gone ${node} c-${name} eth0`;
        continue;
      }
      podItems.push({
        metadata: { namespace: 'default', name, uid: `u-${name}` },
        spec: { nodeName: node },
        status: { podIP: second.secondaryIps[k] },
      });
    }
    if (n === 0) {
      firstPrimary = primary.eniId;
      // Fault: one more address on node0's primary ENI, outside vpcnet.
      const more = (await admin('POST', `/admin/enis/${primary.eniId}/addresses`, {
        secondaryIpCount: 1,
      })) as Eni;
      leaked = more.secondaryIps.find((ip) => !primary.secondaryIps.includes(ip)) ?? '';
    }
  }
  const clients = await createAwsClients({
    region: 'us-west-2',
    ec2Endpoint: emulator.urls[0]!,
    credentials: { accessKeyId: 'AKIDAUDIT', secretAccessKey: 'audit' },
  });
  try {
    // Fault: a vpcnet ENI a crash left detached (created an hour ago for node3's instance).
    const created = await clients.ec2.call('CreateNetworkInterface', {
      SubnetId: SUBNET,
      Description: 'vpcnet: left behind',
      TagSpecification: [
        {
          ResourceType: 'network-interface',
          Tag: [
            { Key: 'vpcnet.io/created-by', Value: 'vpcnet' },
            {
              Key: 'node.k8s.amazonaws.com/createdAt',
              Value: new Date(Date.now() - 3_600_000).toISOString(),
            },
          ],
        },
      ],
    });
    const detached = created.child('networkInterface')?.string('networkInterfaceId') ?? '';
    const baseline = await ec2CallCounts(admin);
    const ec2 = countedEc2(clients.ec2);
    const started = performance.now();
    const report = await runAudit({
      ec2,
      kube: fixedKube({ '/api/v1/pods?limit=500': { items: podItems, metadata: {} } }),
      agents: scriptedAgents(states),
      censusLease: 'kube-system/vpcnet-subnet-census',
      intervalMs: 0,
    });
    const seconds = (performance.now() - started) / 1000;
    assert.deepEqual(
      report.findings.map((f) => f.key).sort(),
      [`detached-eni ${detached}`, goneRecord, `unowned-address ${firstPrimary} ${leaked}`].sort(),
    );
    assert.equal(report.nodes.length, NODES);
    assert.equal(report.enis, 2 * NODES + 1);
    const pages = Math.ceil(report.enis / 1000);
    assert.equal(report.ec2Calls, pages + 1 + 1, 'pages of ENIs, the subnets, one describe to confirm');
    const calls = await ec2CallCounts(admin);
    const by = (k: string) => (calls[k] ?? 0) - (baseline[k] ?? 0);
    assert.equal(by('DescribeNetworkInterfaces'), pages + 1);
    assert.equal(by('DescribeSubnets'), 1);
    t.diagnostic(
      `${NODES} nodes, ${report.enis} ENIs, ${report.pods} pods: ${seconds.toFixed(1)} s, ${report.ec2Calls} EC2 calls`,
    );
    assert.ok(seconds <= 30, `${seconds.toFixed(1)} s for ${NODES} nodes`);
  } finally {
    clients.transport.close();
  }
});
