// The audit's run against the emulator's EC2, through the production Query client: a difference
// only one of the two reads shows (an agent that took up an address between them) is not counted,
// one both show is; the second read describes only the ENIs its candidates rest on; the EC2 calls
// are ⌈ENIs/1000⌉ + 1 for a quiet cluster and one more to confirm; and the per-subnet free
// addresses and /28s equal the emulator's ground truth in a fragmented subnet with reservations.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createAwsClients } from '../../cloud/aws/create-aws-cloud.ts';
import type { LaunchedInstance, RunningEmulator } from '../../emulator/api.ts';
import { startEmulator } from '../../emulator/server.ts';
import { seededRandom } from '../../emulator/vpc/ids.ts';
import { CENSUS_ANNOTATION, encodeCensus } from '../../ipam/census/census-wire.ts';
import { censusOf } from '../../ipam/census/subnet-census.ts';
import { type EmulatorAdmin, ec2CallCounts, emulatorAdmin } from '../testing/emulator-admin.ts';
import { fixedKube } from '../testing/fixed-kube.ts';
import { scriptedAgents } from '../testing/scripted-agents.ts';
import { runAudit } from './audit.ts';
import { countedEc2 } from './sources.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

const VPC_ID = 'vpc-0aud17';
const SUBNET = 'subnet-0aud17';
const CIDR = '10.2.0.0/22';
const RESERVED = { cidr: '10.2.3.0/26', type: 'explicit' as const };
const LEASE = '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/vpcnet-subnet-census';

let emulator: RunningEmulator;
let admin: EmulatorAdmin;
const nodes: LaunchedInstance[] = [];

before(async () => {
  emulator = await startEmulator({
    vpc: {
      vpcId: VPC_ID,
      cidr: '10.2.0.0/16',
      region: 'us-west-2',
      subnets: [
        {
          subnetId: SUBNET,
          cidr: CIDR,
          availabilityZone: 'us-west-2a',
          preFragmentation: {
            seed: 7,
            tenantEnis: 12,
            addressesPerEni: 3,
            prefixesPerEni: 1,
            reservations: [RESERVED],
          },
        },
      ],
    },
    listen: [{ host: '127.0.0.1', port: 0 }],
    random: seededRandom(17),
  });
  admin = emulatorAdmin(emulator.urls[0]!);
  for (const _ of [1, 2])
    nodes.push(
      await emulator.launchInstance({
        instanceType: 'm5.large',
        subnetId: SUBNET,
        securityGroupIds: ['sg-1'],
      }),
    );
});
after(() => emulator.close());

/** An agent's /v1/state: its pool holds `pooled` on its primary ENI, a pod holds the first. */
function agentState(node: LaunchedInstance, pooled: readonly string[]) {
  const [held] = pooled;
  return {
    instanceId: node.instanceId,
    vpcId: VPC_ID,
    pool: {
      enis: [
        {
          eniId: node.primaryEni.eniId,
          addresses: Object.fromEntries(
            pooled.map((ip) => [ip, { kind: ip === held ? 'assigned' : 'free' }]),
          ),
        },
      ],
    },
    attachments:
      held === undefined
        ? []
        : [
            {
              key: { network: 'vpcnet', containerId: `c-${node.instanceId}`, ifName: 'eth0' },
              pod: { namespace: 'default', name: `web-${node.instanceId}`, uid: `u-${node.instanceId}` },
              ip: held,
              eniId: node.primaryEni.eniId,
              phase: 'ready',
            },
          ],
    bindings: [],
  };
}

function pods(states: readonly ReturnType<typeof agentState>[], on: readonly string[]) {
  return {
    items: states.flatMap((s, k) =>
      s.attachments.map((a) => ({
        metadata: { namespace: 'default', name: a.pod.name, uid: a.pod.uid },
        spec: { nodeName: on[k] },
        status: { podIP: a.ip },
      })),
    ),
    metadata: {},
  };
}

test('churn seen in one read is not counted, a fault seen in both is; EC2 calls within budget; subnet figures exact', async () => {
  // Each node's primary ENI gets three secondary IPs from EC2; node a's agent knows all of them;
  // node b's knows two at the first read and the third by the second (it took it up meanwhile);
  // node a then gets one more outside vpcnet, which its agent never learns of.
  const secondary = async (node: LaunchedInstance, count: number): Promise<string[]> => {
    const before = await eniIps(node);
    await admin('POST', `/admin/enis/${node.primaryEni.eniId}/addresses`, { secondaryIpCount: count });
    return (await eniIps(node)).filter((ip) => !before.includes(ip));
  };
  const eniIps = async (node: LaunchedInstance) =>
    ((await admin('GET', '/admin/state')) as { enis: { eniId: string; secondaryIps: string[] }[] }).enis.find(
      (e) => e.eniId === node.primaryEni.eniId,
    )!.secondaryIps;
  const [a, b] = nodes as [LaunchedInstance, LaunchedInstance];
  const aIps = await secondary(a, 3);
  const bIps = await secondary(b, 3);
  const [leaked] = await secondary(a, 1);
  const quietA = agentState(a, aIps);
  const bFirst = agentState(b, bIps.slice(0, 2));
  const bSecond = agentState(b, bIps);
  const census = censusOf({
    subnetId: SUBNET,
    cidr: CIDR,
    takenAt: 0,
    addresses: [],
    prefixes: [],
    reservations: [RESERVED],
  });
  const kube = fixedKube({
    '/api/v1/pods?limit=500': pods([quietA, bSecond], ['node-a', 'node-b']),
    [LEASE]: { metadata: { annotations: { [CENSUS_ANNOTATION]: encodeCensus([census]) } } },
  });
  const clients = await createAwsClients({
    region: 'us-west-2',
    ec2Endpoint: emulator.urls[0]!,
    credentials: { accessKeyId: 'AKIDAUDIT', secretAccessKey: 'audit' },
  });
  try {
    const ec2 = countedEc2(clients.ec2);
    const report = await runAudit({
      ec2,
      kube,
      agents: scriptedAgents({ 'node-a': [quietA], 'node-b': [bFirst, bSecond] }),
      censusLease: 'kube-system/vpcnet-subnet-census',
      intervalMs: 0,
    });
    assert.deepEqual(
      report.findings.map((f) => f.key),
      [`unowned-address ${a.primaryEni.eniId} ${leaked}`],
    );
    assert.equal(report.unconfirmed, 1, `${bIps[2]} on node-b was seen once: churn`);
    assert.equal(report.reads, 2);
    assert.equal(report.vpcId, VPC_ID, 'the VPC the agents name');
    // 2 nodes' ENIs and 12 tenants' in one page, the subnets in one call; one describe of the ENIs
    // the candidates rest on to confirm.
    assert.equal(report.enis, 14);
    assert.equal(report.ec2Calls, 3);
    assert.deepEqual(
      await ec2CallCounts(admin),
      { DescribeNetworkInterfaces: 2, DescribeSubnets: 1 },
      'read-only: describes and nothing else',
    );
    const truth = (await admin('GET', `/admin/subnets/${SUBNET}/capacity`)) as {
      freePrefixes: string[];
      freeAddresses: number;
    };
    const [row] = report.subnets;
    assert.equal(row?.reservationsKnown, true);
    assert.equal(row?.free28s, truth.freePrefixes.length);
    assert.equal(row?.freeAddresses, truth.freeAddresses);
  } finally {
    clients.transport.close();
  }
});
