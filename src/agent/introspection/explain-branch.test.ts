// explain of a pod with its own security groups (a branch ENI on the trunk): the holder sandbox is
// judged with its binding's shared resources, the replaced one is told who holds the branch ENI.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { branchDeviceName } from '../../plan/branch-plan.ts';
import { branchPod, branchWorld } from '../branch/testing/branch-world.ts';
import { explainPod } from './explain.ts';
import { RecentErrors } from './recent-errors.ts';

test('a branch-ENI pod: the holder is whole with its VLAN device, the old sandbox is told who holds it', async () => {
  const w = await branchWorld();
  const pod = branchPod(1);
  w.pods.put(pod);
  assert.equal((await w.cni('ADD', pod, 'old')).exitCode, 0);
  assert.equal((await w.cni('ADD', pod, 'new')).exitCode, 0);
  const cloud = {
    describeInstanceEnis: async () => {
      throw new Error('a branch ENI is not the instance ENIs describe: not asked');
    },
  };
  const deps = {
    ledger: w.ctx.ledger,
    dataplane: w.ctx.dataplane,
    cloud,
    meta: { instanceId: 'i-0fake' },
    manager: { lostEni: () => undefined },
    recentErrors: new RecentErrors(Date.now),
  };
  const x = await explainPod(deps, 'default', pod.name);
  const byId = new Map(x.attachments.map((a) => [a.containerId, a]));
  const holder = byId.get('new');
  assert.equal(holder?.ip, pod.ip);
  assert.equal(holder?.eni?.branch, true);
  assert.match(holder?.eni?.text ?? '', new RegExp(`branch ENI ${pod.eniId} .* VLAN ${pod.vlanId}`));
  assert.equal(holder?.resources.find((r) => r.kind === 'trunkDevice')?.state, 'present');
  assert.deepEqual(
    holder?.resources.filter((r) => r.state !== 'present'),
    [],
  );
  assert.match(byId.get('old')?.summary ?? '', /another sandbox \(container new\) holds its branch ENI/);

  w.ctx.kernel.deleteLink(branchDeviceName({ podUid: pod.uid, eniId: pod.eniId }));
  const broken = await explainPod(deps, 'default', pod.name);
  const device = broken.attachments
    .find((a) => a.containerId === 'new')
    ?.resources.find((r) => r.kind === 'trunkDevice');
  assert.equal(device?.state, 'missing');
});
