// The pool shrinks after a burst, in a one-node lab through the stable CLI: pods beyond the
// primary ENI's addresses make the agent attach a second ENI; once they are all gone and their
// cooldown ended, the agent tears the ENI's link config down and detaches and deletes it (the
// emulator's fabric then removes its link), and pods added afterwards still work.
// Test turn: shared (it waits on its own lab's agents and timers; no CPU or latency bound).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { labLayout } from '../../src/lab/layout.ts';
import {
  addPod,
  agentState,
  cni,
  hostLinks,
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

/** t3.medium: 6 addresses per ENI, the ENI's own primary one included. */
const SECONDARY_PER_ENI = 5;

describe('pool shrink in a one-node lab', () => {
  const name = uniqueLabName('vpcps');
  let lab: LabDesc;
  let node: LabNodeDesc;
  const pods: TestPod[] = [];

  before(async () => {
    await labDown(name);
    lab = await labUp(name, [
      '--instance-type',
      't3.medium',
      '--agent-env',
      'WARM_IP_TARGET=1',
      '--agent-env',
      'IP_COOLDOWN_PERIOD=1',
      '--agent-env',
      'VPCNET_MIN_ENI_LIFETIME_SECONDS=1',
      '--agent-env',
      'VPCNET_ADD_WAIT_SECONDS=30',
    ]);
    node = lab.nodes[0]!;
  });
  after(async () => {
    await labDown(name);
  });

  test('after a burst onto a second ENI and every pod gone, the agent detaches it: only the primary ENI is left, eth1 is gone, and new pods still work', async () => {
    for (let k = 0; k <= SECONDARY_PER_ENI; k++) {
      const pod = await newPod(name, `b${k}`);
      pods.push(pod);
      await addPod(node, pod);
    }
    const burst = await agentState(node);
    assert.deepEqual(
      burst.pool.enis.map((e) => e.deviceNumber),
      [0, 1],
      'the sixth pod spilled onto a second ENI',
    );
    const second = burst.pool.enis[1]!.eniId;
    assert.ok((await hostLinks(node)).includes('eth1'));

    for (const pod of pods) assert.equal((await cni(node, 'DEL', pod)).exitCode, 0);
    for (const pod of pods.splice(0)) await sh(['ip', 'netns', 'del', pod.netnsName]);

    await waitFor(
      'only the primary ENI in the pool and no eth1 link on the node',
      async () => {
        const state = await agentState(node);
        const devices = state.pool.enis.map((e) => e.deviceNumber);
        const links = await hostLinks(node);
        return devices.join() === '0' && !links.includes('eth1') ? true : undefined;
      },
      30_000,
    );
    // The cloud side, as the agent saw it: detached, then deleted (not left over).
    await waitForLogLines(labLayout(name, 1).nodes[0]!.agentLog, second, [
      'freeing idle ENI',
      'detached ENI',
      'deleted ENI',
    ]);

    const after = await newPod(name, 'a1');
    pods.push(after);
    const { ip } = await addPod(node, after);
    assert.ok(ip.startsWith('10.0.'), `${ip} is not in the VPC`);
    const host = lab.vpcHosts[0]!.ip;
    assert.ok(await reaches(after.netnsName, host), `a pod added after the shrink cannot reach ${host}`);
    assert.equal((await cni(node, 'DEL', after)).exitCode, 0);
  });
});
