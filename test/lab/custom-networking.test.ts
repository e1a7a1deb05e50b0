// Custom networking and subnet discovery in one-node labs, through the stable CLI and the real
// plugin. Custom networking: without the node's ENIConfig the pool cannot grow and says why (the
// agent's state, and an ADD's code 11); once the ENIConfig and its subnet exist, pods get addresses
// of that subnet, the primary ENI lends none, and pods reach each other and a VPC host. Subnet
// discovery: a new ENI goes into the tagged subnet with the most free addresses, not into a bigger
// untagged one.
// Test turn: shared (it waits on its own lab's agents and timers; no CPU or latency bound).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  addPod,
  agentState,
  cni,
  ctl,
  deletePodNetns,
  inCidr,
  type LabDesc,
  type LabNodeDesc,
  labDown,
  labUp,
  newPod,
  reaches,
  type TestPod,
  uniqueLabName,
  waitFor,
} from '../lab-fixture.ts';

async function poolOf(node: LabNodeDesc) {
  return (await agentState(node)).pool;
}

describe('custom networking in a one-node lab', () => {
  const name = uniqueLabName('sbcn');
  const podSubnet = { id: 'subnet-0sb00000000000001', cidr: '10.0.64.0/20' };
  let lab: LabDesc;
  let node: LabNodeDesc;
  const pods: TestPod[] = [];

  before(async () => {
    await labDown(name);
    lab = await labUp(name, [
      '--agent-env',
      'AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true',
      '--agent-env',
      'ENI_CONFIG_LABEL_DEF=topology.kubernetes.io/zone',
      '--agent-env',
      'VPCNET_ADD_WAIT_SECONDS=2',
    ]);
    node = lab.nodes[0]!;
  });
  after(async () => {
    await deletePodNetns(pods);
    await labDown(name);
  });

  test('without the node ENIConfig the pool is blocked with the reason, and an ADD fails with code 11 carrying it', async () => {
    const reason = 'ENIConfig us-west-2a (node label topology.kubernetes.io/zone) does not exist';
    const blocked = await waitFor('the pool growth blocked', async () => {
      const b = (await poolOf(node)).growth.blocked;
      return b?.includes(reason) ? b : undefined;
    });
    assert.match(blocked, /^custom networking: /);
    assert.deepEqual((await poolOf(node)).enis, [], "the primary ENI's addresses are not in the pool");
    const pod = await newPod(name, 'none');
    pods.push(pod);
    const out = await cni(node, 'ADD', pod);
    assert.notEqual(out.exitCode, 0);
    const err = JSON.parse(out.stdout) as { code: number; msg: string; details?: string };
    assert.equal(err.code, 11);
    assert.ok(
      `${err.msg} ${err.details ?? ''}`.includes(reason),
      `the error does not carry the reason: ${out.stdout}`,
    );
  });

  test("with the ENIConfig, pods get addresses of its subnet, never the primary ENI's, and reach each other and a VPC host", async () => {
    await ctl(['lab', 'subnet', '--name', name, '--subnet-id', podSubnet.id, '--cidr', podSubnet.cidr]);
    await ctl(['lab', 'eni-config', '--name', name, '--eni-config', 'us-west-2a', '--subnet', podSubnet.id]);
    // The pool retries with backoff (up to a minute) after the failures before the ENIConfig existed.
    const pool = await waitFor(
      'an ENI of the ENIConfig subnet in the pool',
      async () => {
        const p = await poolOf(node);
        return p.enis.some((e) => e.subnetId === podSubnet.id) && p.growth.blocked === null ? p : undefined;
      },
      90_000,
    );
    assert.deepEqual(
      pool.enis.map((e) => [e.deviceNumber, e.subnetId]),
      [[1, podSubnet.id]],
      'only the ENIConfig ENI lends addresses; the primary ENI (device 0) none',
    );
    const a = await newPod(name, 'pa');
    const b = await newPod(name, 'pb');
    pods.push(a, b);
    const ipA = (await addPod(node, a)).ip;
    const ipB = (await addPod(node, b)).ip;
    for (const ip of [ipA, ipB]) assert.ok(inCidr(ip, podSubnet.cidr), `${ip} is not in ${podSubnet.cidr}`);
    assert.ok(await reaches(a.netnsName, ipB), 'pod a cannot reach pod b');
    const host = lab.vpcHosts[0]!.ip;
    assert.ok(await reaches(a.netnsName, host), `pod a cannot reach VPC host ${host}`);
    assert.ok(await reaches(b.netnsName, host), `pod b cannot reach VPC host ${host}`);
    for (const pod of [a, b]) assert.equal((await cni(node, 'DEL', pod)).exitCode, 0);
  });
});

describe('subnet discovery in a one-node lab', () => {
  const name = uniqueLabName('sbsd');
  const tagged = { id: 'subnet-0sb00000000000002', cidr: '10.0.80.0/20' };
  const untagged = { id: 'subnet-0sb00000000000003', cidr: '10.0.128.0/17' };
  let lab: LabDesc;
  let node: LabNodeDesc;
  const pods: TestPod[] = [];

  before(async () => {
    await labDown(name);
    // WARM_ENI_TARGET=0 and WARM_IP_TARGET=1: a second ENI only once the primary's addresses are used.
    lab = await labUp(name, [
      '--agent-env',
      'ENABLE_SUBNET_DISCOVERY=true',
      '--agent-env',
      'WARM_IP_TARGET=1',
      '--agent-env',
      'VPCNET_ADD_WAIT_SECONDS=30',
    ]);
    node = lab.nodes[0]!;
    await ctl(['lab', 'subnet', '--name', name, '--subnet-id', untagged.id, '--cidr', untagged.cidr]);
    await ctl([
      'lab',
      'subnet',
      '--name',
      name,
      '--subnet-id',
      tagged.id,
      '--cidr',
      tagged.cidr,
      '--tag',
      'kubernetes.io/role/cni=1',
    ]);
  });
  after(async () => {
    await deletePodNetns(pods);
    await labDown(name);
  });

  test('a new ENI goes into the tagged subnet with the most free addresses, and its pods reach a VPC host', async () => {
    // t3.medium: 5 secondary addresses on the primary ENI, then the pool needs a second ENI.
    let last = '';
    for (let k = 0; k < 6; k++) {
      const pod = await newPod(name, `d${k}`);
      pods.push(pod);
      last = (await addPod(node, pod)).ip;
    }
    const pool = await poolOf(node);
    const second = pool.enis.find((e) => e.deviceNumber === 1);
    assert.equal(second?.subnetId, tagged.id, `the second ENI went into ${second?.subnetId}`);
    assert.ok(inCidr(last, tagged.cidr), `the sixth pod's ${last} is not in ${tagged.cidr}`);
    const host = lab.vpcHosts[0]!.ip;
    assert.ok(
      await reaches(pods.at(-1)!.netnsName, host),
      `a pod of the discovered subnet cannot reach ${host}`,
    );
    for (const pod of pods) assert.equal((await cni(node, 'DEL', pod)).exitCode, 0);
  });
});
