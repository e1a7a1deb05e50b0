// The background GC of dead pods (upstream #3109) in a one-node lab through the stable CLI: a pod
// whose namespace is deleted and which is deleted from the lab's Kubernetes API, without any DEL,
// gets its address back into the pool after the grace; a pod whose namespace is gone but which the
// API still has, and a pod gone from the API whose namespace still exists, keep theirs.
// Test turn: shared (it waits on its own lab's agents and timers; no CPU or latency bound).
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { labLayout } from '../../src/lab/layout.ts';
import {
  addPod,
  agentState,
  dropPod,
  type LabNodeDesc,
  labDown,
  labUp,
  newPod,
  registerPod,
  sh,
  type TestPod,
  uniqueLabName,
  waitFor,
} from '../lab-fixture.ts';

const GRACE_SECONDS = 3;

describe('dead-pod GC in a one-node lab', () => {
  const name = uniqueLabName('gc');
  let node: LabNodeDesc;

  before(async () => {
    await labDown(name);
    const lab = await labUp(name, [
      '--agent-env',
      `VPCNET_DEAD_POD_GC_GRACE_SECONDS=${GRACE_SECONDS}`,
      '--agent-env',
      'IP_COOLDOWN_PERIOD=1',
    ]);
    node = lab.nodes[0]!;
  });
  after(async () => {
    await labDown(name);
  });

  async function startPod(short: string): Promise<{ pod: TestPod; ip: string }> {
    const pod = await newPod(name, short, { uid: `uid-${short}` });
    await registerPod(name, node.name, pod.namespace, pod.name, pod.uid!);
    const { ip } = await addPod(node, pod);
    return { pod, ip };
  }

  const deleteFromApi = (pod: TestPod) => dropPod(name, pod.namespace, pod.name);

  test('a pod deleted from the API with its namespace gone and no DEL: its address returns to the pool after the grace', async () => {
    const dead = await startPod('dead');
    const lostNetns = await startPod('lostns');
    const apiGone = await startPod('apigone');
    const startedAt = Date.now();
    await sh(['ip', 'netns', 'del', dead.pod.netnsName]);
    await deleteFromApi(dead.pod);
    await sh(['ip', 'netns', 'del', lostNetns.pod.netnsName]);
    await deleteFromApi(apiGone.pod);

    const state = await waitFor('the dead pod attachment collected', async () => {
      const s = await agentState(node);
      return s.attachments.some((a) => a.ip === dead.ip) ? undefined : s;
    });
    assert.ok(
      Date.now() - startedAt >= GRACE_SECONDS * 1000,
      'collected no sooner than the grace after the pod left the API',
    );
    assert.deepEqual(
      state.attachments.map((a) => a.ip).sort(),
      [lostNetns.ip, apiGone.ip].sort(),
      'a namespace gone with the pod in the API, and a pod gone with its namespace there, are kept',
    );
    const gc = (state as unknown as { deadPodGc: { collected: number; graceSeconds: number } }).deadPodGc;
    assert.deepEqual([gc.collected, gc.graceSeconds], [1, GRACE_SECONDS]);

    // No rule or SNAT entry of the address is left on the node, and it cools down, then is free.
    const rules = await sh(['ip', '-n', node.netns, 'rule', 'show']);
    assert.equal(rules.includes(`${dead.ip} `), false, `a rule of ${dead.ip} is left:\n${rules}`);
    await waitFor(`${dead.ip} free in the pool`, async () => {
      const s = await agentState(node);
      const cooling = s.cooling.some((c) => c.ip === dead.ip);
      return !cooling && !s.attachments.some((a) => a.ip === dead.ip) ? true : undefined;
    });
    const log = await readFile(labLayout(name, 1).nodes[0]!.agentLog, 'utf8');
    const line = log.split('\n').find((l) => l.includes('dead-pod GC: collected'));
    assert.ok(line?.includes(dead.ip) && line.includes(dead.pod.containerId), `log line: ${line}`);
  });
});
