// Subnet discovery's tags in a running one-node lab, set and removed with `vpcnetctl lab subnet`
// while pods run, through the real plugin: a new ENI goes into the subnet tagged
// kubernetes.io/role/cni=1, not into a bigger one kept to another cluster by
// cni.networking.k8s.aws/cluster/<name>; once that subnet is tagged 0 its ENI lends nothing more
// (the next pods get addresses of the subnet now kept to this cluster) and is detached and deleted
// once its last pod is gone, while the pods of the primary ENI keep working.
// Test turn: shared (it waits on its own lab's agents and timers; no CPU or latency bound).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { labLayout } from '../../src/lab/layout.ts';
import {
  addPod,
  agentState,
  cni,
  ctl,
  emulatorState,
  inCidr,
  type LabDesc,
  type LabNodeDesc,
  labDown,
  labUp,
  newPod,
  reaches,
  sh,
  type TestPod,
  uniqueLabName,
  waitFor,
  waitForLogLines,
} from '../lab-fixture.ts';

const ROLE = 'kubernetes.io/role/cni';
const CLUSTER_TAG = 'cni.networking.k8s.aws/cluster/';

async function poolOf(node: LabNodeDesc) {
  return (await agentState(node)).pool;
}

describe('subnet tags 0, 1 and cluster on a running lab', () => {
  const name = uniqueLabName('sbtg');
  const cluster = `c-${name}`;
  const offered = { id: 'subnet-0sb00000000000011', cidr: '10.0.80.0/20' };
  const otherCluster = { id: 'subnet-0sb00000000000012', cidr: '10.0.128.0/17' };
  let lab: LabDesc;
  let node: LabNodeDesc;
  const pods: TestPod[] = [];
  /** `vpcnetctl lab subnet` on this lab, for `subnetId`. */
  const labSubnet = (subnetId: string, ...args: string[]) =>
    ctl(['lab', 'subnet', '--name', name, '--subnet-id', subnetId, ...args]);

  before(async () => {
    await labDown(name);
    // t3.medium: five pod addresses on the primary ENI; WARM_IP_TARGET=1 grows an ENI only when
    // they are used. Short cooldown, lifetime and tag period, so the drain is seen in seconds.
    lab = await labUp(name, [
      '--instance-type',
      't3.medium',
      '--agent-env',
      'ENABLE_SUBNET_DISCOVERY=true',
      '--agent-env',
      `CLUSTER_NAME=${cluster}`,
      '--agent-env',
      'WARM_IP_TARGET=1',
      '--agent-env',
      'IP_COOLDOWN_PERIOD=1',
      '--agent-env',
      'VPCNET_MIN_ENI_LIFETIME_SECONDS=1',
      '--agent-env',
      'VPCNET_SUBNET_TAGS_SECONDS=1',
      '--agent-env',
      'VPCNET_ADD_WAIT_SECONDS=30',
    ]);
    node = lab.nodes[0]!;
    await labSubnet(offered.id, '--cidr', offered.cidr, '--tag', `${ROLE}=1`);
    const other = ['--tag', `${ROLE}=1`, '--tag', `${CLUSTER_TAG}someone-else=shared`];
    await labSubnet(otherCluster.id, '--cidr', otherCluster.cidr, ...other);
  });
  after(async () => {
    for (const pod of pods) {
      await cni(node, 'DEL', pod).catch(() => {});
      await sh(['ip', 'netns', 'del', pod.netnsName]).catch(() => {});
    }
    await labDown(name);
  });

  test('the new ENI lands in the subnet tagged 1, not the bigger one kept to another cluster; tagged 0 it drains and is freed once empty', async () => {
    const ips: string[] = [];
    for (let k = 0; k < 6; k++) {
      const pod = await newPod(name, `t${k}`);
      pods.push(pod);
      ips.push((await addPod(node, pod)).ip);
    }
    const grown = await poolOf(node);
    const first = grown.enis.find((e) => e.deviceNumber === 1);
    assert.equal(first?.subnetId, offered.id, `the second ENI went into ${first?.subnetId}`);
    const onOffered = pods[5]!;
    assert.ok(inCidr(ips[5]!, offered.cidr), `the sixth pod's ${ips[5]} is not in ${offered.cidr}`);

    // Drain the subnet the ENI is in; hand the other one to this cluster.
    const drained = JSON.parse(await labSubnet(offered.id, '--tag', `${ROLE}=0`)) as {
      tags: Record<string, string>;
    };
    assert.equal(drained.tags[ROLE], '0');
    const mine = ['--tag', `${CLUSTER_TAG}${cluster}=shared`];
    await labSubnet(otherCluster.id, '--untag', `${CLUSTER_TAG}someone-else`, ...mine);
    const draining = await waitFor('the ENI of the drained subnet to drain', async () => {
      const p = await poolOf(node);
      return p.drain?.enis.includes(first.eniId) === true ? p : undefined;
    });
    assert.equal(draining.drain?.subnets[offered.id], `tagged ${ROLE}=0`);

    const next = await newPod(name, 't6');
    pods.push(next);
    const nextIp = (await addPod(node, next)).ip;
    assert.ok(inCidr(nextIp, otherCluster.cidr), `the next pod's ${nextIp} is not in ${otherCluster.cidr}`);
    assert.ok(
      await reaches(next.netnsName, lab.vpcHosts[0]!.ip),
      'a pod of the newly offered subnet is cut off',
    );
    assert.ok(
      await reaches(onOffered.netnsName, lab.vpcHosts[0]!.ip),
      "the drained ENI's pod lost its network",
    );
    assert.ok(await reaches(pods[0]!.netnsName, nextIp), 'a pod of the primary ENI cannot reach the new pod');

    // The drained ENI's last pod goes: the ENI is detached and deleted.
    assert.equal((await cni(node, 'DEL', onOffered)).exitCode, 0);
    await waitFor(
      'the drained ENI gone from the pool and from the instance',
      async () => {
        const p = await poolOf(node);
        const attached = (await emulatorState(name)).enis.filter((e) => e.attachment !== null);
        return !p.enis.some((e) => e.eniId === first.eniId) && !attached.some((e) => e.eniId === first.eniId)
          ? true
          : undefined;
      },
      30_000,
    );
    await waitForLogLines(labLayout(name, 1).nodes[0]!.agentLog, first.eniId, [
      'ENI drains',
      'freeing idle ENI',
      'deleted ENI',
    ]);
    const left = await poolOf(node);
    assert.ok(!left.enis.some((e) => e.subnetId === offered.id), 'no ENI of the drained subnet is left');
    for (const pod of pods.slice(0, 5)) {
      assert.ok(await reaches(pod.netnsName, nextIp), `${pod.name} on the primary ENI lost its network`);
    }
  });
});
