// Prefix delegation in a one-node lab (t3.medium) through the stable CLI: pods get addresses out
// of /28 prefixes and reach a VPC host; a fragmented subnet (no free /28) makes the agent fall back
// to secondary IPs while pods keep starting, and the agent returns to prefixes once the subnet has
// a free /28 again, giving back the secondary IPs it took.
// Test turn: shared (it waits on its own lab's agents and timers; no CPU or latency bound).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { labLayout } from '../../src/lab/layout.ts';
import { unixJson } from '../../src/lab/unix-http.ts';
import {
  addPod,
  agentState,
  attachedEnis,
  cni,
  deletePodNetns,
  emulatorState,
  inIpv4Prefixes,
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

interface PrefixState {
  readonly enabled: boolean;
  readonly mode: 'prefixes' | 'secondaryIpFallback';
  readonly fallbacks: number;
}

describe('prefix delegation in a one-node lab', () => {
  const name = uniqueLabName('px');
  let lab: LabDesc;
  let node: LabNodeDesc;
  const pods: TestPod[] = [];
  const ips: string[] = [];

  const admin = () => labLayout(name, 1).emulator.adminSocket;
  const emulator = () => emulatorState(name);
  const prefixState = async () => (await agentState(node)).pool as unknown as { prefixes: PrefixState };
  const nodeEnis = () => attachedEnis(name);

  async function startPods(count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      const pod = await newPod(name, `p${pods.length}`);
      pods.push(pod);
      ips.push((await addPod(node, pod)).ip);
    }
  }

  before(async () => {
    await labDown(name);
    lab = await labUp(name, [
      '--instance-type',
      't3.medium',
      '--agent-env',
      'ENABLE_PREFIX_DELEGATION=true',
      '--agent-env',
      'IP_COOLDOWN_PERIOD=1',
      '--agent-env',
      'VPCNET_ADD_WAIT_SECONDS=30',
    ]);
    node = lab.nodes[0]!;
  });
  after(async () => {
    for (const pod of pods) await cni(node, 'DEL', pod).catch(() => undefined);
    await deletePodNetns(pods);
    await labDown(name);
  });

  test('20 pods fit on the primary ENI (6 addresses with secondary IPs): each address is in a delegated /28 and pods reach a VPC host', async () => {
    await startPods(20);
    const enis = await nodeEnis();
    assert.equal(enis.length, 1, 'no second ENI: the primary ENI holds the prefixes');
    for (const ip of ips) assert.ok(inIpv4Prefixes(ip, enis), `${ip} is in a delegated prefix`);
    assert.deepEqual(enis[0]!.secondaryIps, [], 'no secondary IPs in prefix mode');
    assert.equal(new Set(ips).size, ips.length);
    const host = lab.vpcHosts[0]!.ip;
    for (const pod of [pods[0]!, pods[17]!])
      assert.ok(await reaches(pod.netnsName, host), `${pod.name} reaches ${host}`);
    const { prefixes } = await prefixState();
    assert.equal(prefixes.enabled, true);
    assert.equal(prefixes.mode, 'prefixes');
  });

  test('a fragmented subnet: pods keep starting on a fallback to secondary IPs, and prefixes come back once a /28 is free', async () => {
    const subnetId = (await emulator()).instances[0]!.subnetId;
    const fragmentation = `/admin/subnets/${subnetId}/fragmentation`;
    // 20 pods fill 1¼ prefixes, a third is warm: the 33rd pod makes the agent want a fourth. The
    // warm one comes at the pool's paced turn (the fleet's pace draws it within an interval).
    await waitFor('a whole /28 warm beside the 20 pods', async () =>
      (await agentState(node)).pool.stats.available >= 16 ? true : undefined,
    );
    await unixJson(admin(), 'POST', fragmentation);
    try {
      await startPods(14);
      await waitFor('the agent to fall back to secondary IPs', async () =>
        (await prefixState()).prefixes.mode === 'secondaryIpFallback' ? true : undefined,
      );
      await waitFor('secondary IPs on the node in EC2', async () =>
        (await nodeEnis()).some((e) => e.secondaryIps.length > 0) ? true : undefined,
      );
      const last = pods.at(-1)!;
      assert.ok(
        await reaches(last.netnsName, lab.vpcHosts[0]!.ip),
        'a pod started during the fallback works',
      );
    } finally {
      await unixJson(admin(), 'DELETE', fragmentation);
    }
    let last = '';
    await waitFor(
      'the agent back on prefixes, without secondary IPs',
      async () => {
        const pool = await prefixState();
        const { prefixes } = pool;
        const secondary = (await nodeEnis()).flatMap((e) => e.secondaryIps);
        last = JSON.stringify({ secondary, pool });
        return prefixes.mode === 'prefixes' && secondary.length === 0 ? prefixes : undefined;
      },
      90_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; last seen: ${last}`);
    });
    assert.equal((await prefixState()).prefixes.fallbacks, 1);
    const pod = await newPod(name, `p${pods.length}`);
    pods.push(pod);
    const { ip } = await addPod(node, pod);
    ips.push(ip);
    assert.ok(inIpv4Prefixes(ip, await nodeEnis()), `${ip} (a pod after the recovery) is in a prefix`);
  });

  test("the node holds upstream's prefix-mode maximum for a t3.medium: 108 pods beside the 2 host-network ones (110)", async () => {
    // 3 ENIs × 5 slots × 16 = 240 addresses would fit; max pods caps it at 110, as upstream does.
    await startPods(108 - pods.length);
    assert.equal(ips.length, 108);
    assert.equal(new Set(ips).size, 108, 'no address handed out twice');
    const enis = await nodeEnis();
    for (const ip of ips) assert.ok(inIpv4Prefixes(ip, enis), `${ip} is in a delegated prefix`);
    assert.ok(enis.length <= 3, `${enis.length} ENIs`);
    const host = lab.vpcHosts[0]!.ip;
    assert.ok(await reaches(pods.at(-1)!.netnsName, host), 'the 108th pod reaches the VPC host');
  });
});
