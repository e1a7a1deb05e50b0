// Custom networking together with pods that have their own security groups, in a one-node lab,
// through the stable CLI and the real plugin: the agent lists SecurityGroupsForPods and
// CustomNetworking (naming the node's ENIConfig) in its node's CNINode; the emulated resource
// controller, reading them as the real one does, attaches the trunk ENI in the ENIConfig's subnet
// and gives a pod with security groups a branch ENI there too; the pod gets that ENI's address and
// reaches a VPC host. Without the CNINode features the controller would place both in the node's
// own subnet, which custom networking exists to keep free.
// Test turn: shared (it waits on its own lab's agents and timers; no CPU or latency bound).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { cidrContains, parseCidr, parseIpv4 } from '../../src/infra/ipv4.ts';
import { labLayout } from '../../src/lab/layout.ts';
import { unixJson } from '../../src/lab/unix-http.ts';
import {
  addPod,
  cni,
  ctl,
  deletePodNetns,
  emulatorState,
  type LabDesc,
  type LabNodeDesc,
  labDown,
  labUp,
  newPod,
  reaches,
  registerSgPod,
  type TestPod,
  uniqueLabName,
  waitFor,
  waitForTrunk,
} from '../lab-fixture.ts';

const ZONE = 'us-west-2a';

function inCidr(ip: string, cidr: string): boolean {
  return cidrContains(parseCidr(cidr), parseIpv4(ip));
}

describe('custom networking with pods that have their own security groups (CNINode features)', () => {
  const name = uniqueLabName('cnsg');
  const podSubnet = { id: 'subnet-0cn00000000000001', cidr: '10.0.64.0/20' };
  let lab: LabDesc;
  let node: LabNodeDesc;
  const sandboxes: TestPod[] = [];

  before(async () => {
    await labDown(name);
    lab = await labUp(name, [
      '--pod-eni',
      '--instance-type',
      'm5.2xlarge',
      '--agent-env',
      'AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true',
      '--agent-env',
      'ENI_CONFIG_LABEL_DEF=topology.kubernetes.io/zone',
    ]);
    node = lab.nodes[0]!;
    await ctl(['lab', 'subnet', '--name', name, '--subnet-id', podSubnet.id, '--cidr', podSubnet.cidr]);
    await ctl([
      'lab',
      'eni-config',
      '--name',
      name,
      '--eni-config',
      ZONE,
      '--subnet',
      podSubnet.id,
      '--security-groups',
      'sg-0eniconfig',
    ]);
  });
  after(async () => {
    await deletePodNetns(sandboxes);
    await labDown(name);
  });

  test("the agent's CNINode lists SecurityGroupsForPods and CustomNetworking naming the node's ENIConfig, and is owned by the node", async () => {
    const adminSocket = labLayout(name, 0).emulator.adminSocket;
    const cniNode = await waitFor('the CNINode of the node with both features', async () => {
      const got = (await unixJson(
        adminSocket,
        'GET',
        `/apis/vpcresources.k8s.aws/v1alpha1/cninodes/${node.name}`,
      )) as {
        metadata: { ownerReferences?: { kind: string; name: string }[] };
        spec: { features?: { name: string; value?: string }[] };
      };
      return got.spec.features?.length === 2 ? got : undefined;
    });
    assert.deepEqual(cniNode.spec.features, [
      { name: 'SecurityGroupsForPods' },
      { name: 'CustomNetworking', value: ZONE },
    ]);
    assert.deepEqual(
      cniNode.metadata.ownerReferences?.map((o) => [o.kind, o.name]),
      [['Node', node.name]],
    );
  });

  test("the trunk ENI is attached in the ENIConfig's subnet with its security groups, and a pod's branch ENI is there too; the pod has its address and reaches a VPC host", async () => {
    await waitForTrunk(name, node.name);
    const state = await emulatorState(name);
    const instanceId = state.instances[0]!.instanceId;
    const trunk = state.enis.find(
      (e) => e.interfaceType === 'trunk' && e.attachment?.instanceId === instanceId,
    );
    assert.ok(trunk, 'the node has a trunk ENI');
    assert.deepEqual(
      [trunk.subnetId, trunk.securityGroupIds],
      [podSubnet.id, ['sg-0eniconfig']],
      "the trunk is in the ENIConfig's subnet, with its security groups",
    );
    assert.notEqual(podSubnet.id, state.instances[0]!.subnetId);

    const podName = `sg-${randomBytes(2).toString('hex')}`;
    const branch = await registerSgPod(name, node.name, 'default', podName, `uid-${podName}`);
    assert.equal(branch.subnetCidr, podSubnet.cidr, "the pod-eni annotation names the ENIConfig's subnet");
    assert.ok(inCidr(branch.ip, podSubnet.cidr), `${branch.ip} is not in ${podSubnet.cidr}`);
    const branchEni = (await emulatorState(name)).enis.find((e) => e.eniId === branch.eniId);
    assert.equal(branchEni?.subnetId, podSubnet.id);
    assert.equal(branchEni?.trunkAssociation?.trunkEniId, trunk.eniId);

    const sandbox = await newPod(name, `s${randomBytes(4).toString('hex')}`, {
      name: podName,
      uid: `uid-${podName}`,
    });
    sandboxes.push(sandbox);
    assert.equal((await addPod(node, sandbox)).ip, branch.ip, "the pod has its branch ENI's address");
    const host = lab.vpcHosts[0]!.ip;
    assert.ok(await reaches(sandbox.netnsName, host), `the pod cannot reach VPC host ${host}`);
    const out = await cni(node, 'DEL', sandbox);
    assert.equal(out.exitCode, 0, out.stdout);
  });
});
