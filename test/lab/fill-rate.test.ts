// One node filled from no pods to its maximum at 10 pods a second, through the installed plugin
// as a runtime calls it, under the pool settings users pick to conserve addresses (a small
// WARM_IP_TARGET, a MINIMUM_IP_TARGET, prefix delegation). The agent's EC2 budget must keep up:
// no ADD may fail, whatever the warm setting. An m5.4xlarge gives 8 ENIs of 30 addresses (232 pod
// addresses; 108 pods in prefix mode, kubelet's cap of 110 less the two host-network pods): a pool
// that topped up one address per call would spend a call per pod.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { maxPods } from '../../src/ipam/pool/max-pods.ts';
import {
  addPod,
  agentState,
  deletePodNetns,
  emulatorState,
  type LabNodeDesc,
  labDown,
  labUp,
  newPod,
  registerPod,
  type TestPod,
  uniqueLabName,
} from '../lab-fixture.ts';

const INSTANCE_TYPE = 'm5.4xlarge';
const LIMITS = { maxEnis: 8, ipsPerEni: 30 };
const PODS_PER_SECOND = 10;

interface FillCase {
  readonly what: string;
  readonly env: Record<string, string>;
  readonly prefixDelegation: boolean;
}

const CASES: readonly FillCase[] = [
  { what: 'WARM_IP_TARGET=5', env: { WARM_IP_TARGET: '5' }, prefixDelegation: false },
  { what: 'WARM_IP_TARGET=4', env: { WARM_IP_TARGET: '4' }, prefixDelegation: false },
  { what: 'WARM_IP_TARGET=2', env: { WARM_IP_TARGET: '2' }, prefixDelegation: false },
  {
    what: 'WARM_IP_TARGET=1, MINIMUM_IP_TARGET=3',
    env: { WARM_IP_TARGET: '1', MINIMUM_IP_TARGET: '3' },
    prefixDelegation: false,
  },
  {
    // The fixed per-agent rate vpcnet had, sized for 1,000 nodes: as an operator's ceiling it
    // must still fill a node, since top-ups ask for the whole deficit at once.
    what: 'WARM_IP_TARGET=3 under ceilings of 0.08 calls/s, burst 60',
    env: { WARM_IP_TARGET: '3', VPCNET_EC2_QPS: '0.08', VPCNET_EC2_BURST: '60' },
    prefixDelegation: false,
  },
  {
    what: 'prefix delegation, WARM_IP_TARGET=2',
    env: { ENABLE_PREFIX_DELEGATION: 'true', WARM_IP_TARGET: '2', WARM_PREFIX_TARGET: '0' },
    prefixDelegation: true,
  },
];

interface AddOutcome {
  readonly pod: TestPod;
  readonly ms: number;
  readonly error?: string;
}

/** Starts one ADD every 1/rate s (each in its own new namespace) without waiting for the last. */
async function fillAtRate(lab: string, node: LabNodeDesc, count: number): Promise<AddOutcome[]> {
  const started = Date.now();
  const adds: Promise<AddOutcome>[] = [];
  for (let k = 0; k < count; k++) {
    const due = started + (k * 1000) / PODS_PER_SECOND;
    const lag = due - Date.now();
    if (lag > 0) await sleep(lag);
    adds.push(
      (async () => {
        const pod = await newPod(lab, `f${k}`);
        await registerPod(lab, node.name, pod.namespace, pod.name, `uid-${pod.containerId}`);
        const t0 = Date.now();
        try {
          await addPod(node, pod);
          return { pod, ms: Date.now() - t0 };
        } catch (err) {
          return { pod, ms: Date.now() - t0, error: err instanceof Error ? err.message : String(err) };
        }
      })(),
    );
  }
  return Promise.all(adds);
}

for (const c of CASES) {
  describe(`one ${INSTANCE_TYPE} filled to its max pods at ${PODS_PER_SECOND} pods/s (${c.what})`, () => {
    const name = uniqueLabName('vpcfr');
    const pods: TestPod[] = [];
    after(async () => {
      await labDown(name);
      await deletePodNetns(pods);
    });

    test('every ADD succeeds, the pool ends at the node limit, and top-ups were batched', async (t) => {
      const lab = await labUp(name, [
        '--instance-type',
        INSTANCE_TYPE,
        ...Object.entries(c.env).flatMap(([k, v]) => ['--agent-env', `${k}=${v}`]),
      ]);
      const node = lab.nodes[0]!;
      const count = maxPods(LIMITS, { prefixDelegation: c.prefixDelegation, vcpus: 16 }) - 2;
      const assignsBefore = await callsOf(name, 'AssignPrivateIpAddresses');
      const outcomes = await fillAtRate(name, node, count);
      pods.push(...outcomes.map((o) => o.pod));
      const failed = outcomes.filter((o) => o.error !== undefined);
      const slowest = Math.max(...outcomes.map((o) => o.ms));
      const state = await agentState(node);
      const assigns = (await callsOf(name, 'AssignPrivateIpAddresses')) - assignsBefore;
      t.diagnostic(
        `${count} pods, ${failed.length} failed, slowest ADD ${slowest} ms, ${assigns} AssignPrivateIpAddresses, growth ${state.pool.growth.blocked ?? 'free'}`,
      );
      assert.deepEqual(
        failed.map((o) => `${o.pod.name}: ${o.error}`),
        [],
        `ADDs failed while the node filled at ${PODS_PER_SECOND} pods/s`,
      );
      assert.equal(state.pool.stats.assigned, count, 'every pod holds an address in the pool');
      // One call per pod is the starving pattern; batched top-ups need far fewer.
      assert.ok(assigns <= count / 4, `${assigns} AssignPrivateIpAddresses calls for ${count} pods`);
    });
  });
}

async function callsOf(lab: string, action: string): Promise<number> {
  const state = (await emulatorState(lab)) as { ec2Calls?: Record<string, { calls: number }> };
  return state.ec2Calls?.[action]?.calls ?? 0;
}
