// IMDS-only mode (ENABLE_IMDS_ONLY_MODE, upstream's locked-down VPC mode) in a one-node lab,
// through the stable CLI and the real plugin: the agent makes no EC2 call at all (the emulator
// counts them); until an ENI is attached for it a pod gets code 11 saying why; an ENI the operator
// attaches (`vpcnetctl lab eni`) lends its addresses once two IMDS reads, the stale window apart,
// list them; and pods on those addresses reach each other and a VPC host.
// Test turn: shared (it waits on its own lab's agents and timers; no CPU or latency bound).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { labLayout } from '../../src/lab/layout.ts';
import { unixJson } from '../../src/lab/unix-http.ts';
import {
  addPod,
  agentState,
  cni,
  ctl,
  deletePodNetns,
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

const STALE_SECONDS = 2;

/** EC2 calls the lab's emulator answered since it started, per action. */
async function ec2Calls(lab: string): Promise<Record<string, { calls: number }>> {
  const state = (await unixJson(labLayout(lab, 0).emulator.adminSocket, 'GET', '/admin/state')) as {
    ec2Calls: Record<string, { calls: number }>;
  };
  return state.ec2Calls;
}

describe('IMDS-only mode in a one-node lab', () => {
  const name = uniqueLabName('imo');
  let lab: LabDesc;
  let node: LabNodeDesc;
  const pods: TestPod[] = [];

  before(async () => {
    await labDown(name);
    lab = await labUp(name, [
      '--agent-env',
      'ENABLE_IMDS_ONLY_MODE=true',
      '--agent-env',
      `VPCNET_IMDS_STALE_SECONDS=${STALE_SECONDS}`,
      '--agent-env',
      'VPCNET_ADD_WAIT_SECONDS=2',
    ]);
    node = lab.nodes[0]!;
  });
  after(async () => {
    await deletePodNetns(pods);
    await labDown(name);
  });

  test('with no ENI attached for it, an ADD fails with code 11 saying the pool lends only what is attached', async () => {
    const state = await agentState(node);
    assert.equal((state.pool as unknown as { provisioning: boolean }).provisioning, false);
    assert.equal(state.pool.stats.total, 0, 'the primary ENI has no secondary address');
    const pod = await newPod(name, 'none');
    pods.push(pod);
    const out = await cni(node, 'ADD', pod);
    assert.notEqual(out.exitCode, 0);
    const err = JSON.parse(out.stdout) as { code: number; msg: string; details?: string };
    assert.equal(err.code, 11);
    assert.match(
      `${err.msg} ${err.details ?? ''}`,
      /ENI provisioning is off: the pool lends only what is attached/,
    );
  });

  test("an operator's ENI lends its addresses after two IMDS reads; pods reach each other and a VPC host; no EC2 call", async () => {
    const eni = JSON.parse(
      await ctl(['lab', 'eni', '--name', name, '--node', node.name, '--secondary-ips', '3']),
    ) as {
      eniId: string;
      deviceIndex: number;
      secondaryIps: string[];
    };
    assert.equal(eni.deviceIndex, 1);
    const seenAt = Date.now();
    const lendable = await waitFor('the ENI addresses to be lendable', async () => {
      const s = await agentState(node);
      return s.pool.stats.available === 3 ? s : undefined;
    });
    assert.ok(
      Date.now() - seenAt >= STALE_SECONDS * 1000,
      'no address is lendable before a second read, the window after the first',
    );
    assert.deepEqual(
      lendable.pool.enis.map((e) => [e.eniId, e.deviceNumber]).slice(1),
      [[eni.eniId, 1]],
      'the primary ENI, and the ENI the operator attached',
    );

    const a = await newPod(name, 'pa');
    const b = await newPod(name, 'pb');
    pods.push(a, b);
    const ipA = (await addPod(node, a)).ip;
    const ipB = (await addPod(node, b)).ip;
    for (const ip of [ipA, ipB]) assert.ok(eni.secondaryIps.includes(ip), `${ip} is not the ENI's`);
    assert.ok(await reaches(a.netnsName, ipB), 'pod a cannot reach pod b');
    const host = lab.vpcHosts[0]!.ip;
    assert.ok(await reaches(a.netnsName, host), `pod a cannot reach VPC host ${host}`);
    assert.ok(await reaches(b.netnsName, host), `pod b cannot reach VPC host ${host}`);
    for (const pod of [a, b]) assert.equal((await cni(node, 'DEL', pod)).exitCode, 0);
    assert.deepEqual(await ec2Calls(name), {}, 'the agent made no EC2 call');
  });
});

describe('DISABLE_NETWORK_RESOURCE_PROVISIONING in a one-node lab', () => {
  const name = uniqueLabName('dnp');
  let node: LabNodeDesc;
  const pods: TestPod[] = [];

  before(async () => {
    await labDown(name);
    const lab = await labUp(name, [
      '--agent-env',
      'DISABLE_NETWORK_RESOURCE_PROVISIONING=true',
      '--agent-env',
      'VPCNET_EC2_SYNC_SECONDS=1',
      '--agent-env',
      'VPCNET_EC2_STALE_SECONDS=1',
    ]);
    node = lab.nodes[0]!;
  });
  after(async () => {
    await deletePodNetns(pods);
    await labDown(name);
  });

  test("the agent describes EC2 but changes nothing: an operator's ENI serves pods, and no mutating call is made", async () => {
    const eni = JSON.parse(
      await ctl(['lab', 'eni', '--name', name, '--node', node.name, '--secondary-ips', '2']),
    ) as {
      secondaryIps: string[];
    };
    await waitFor('the ENI addresses in the pool', async () =>
      (await agentState(node)).pool.stats.available === 2 ? true : undefined,
    );
    const pod = await newPod(name, 'pa');
    pods.push(pod);
    assert.ok(eni.secondaryIps.includes((await addPod(node, pod)).ip));
    assert.equal((await cni(node, 'DEL', pod)).exitCode, 0);
    const actions = Object.keys(await ec2Calls(name));
    assert.ok(actions.length > 0, 'EC2 is described');
    // Reads only: Describe* and the census's GetSubnetCidrReservations.
    assert.deepEqual(
      actions.filter((a) => !a.startsWith('Describe') && !a.startsWith('Get')),
      [],
      'nothing but Describe* and Get* calls',
    );
  });
});
