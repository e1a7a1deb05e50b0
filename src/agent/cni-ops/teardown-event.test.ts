// The stale-DEL incident (upstream #1644), prevented, is reported as an Event on the pod.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AgentEvent, EventRecorder } from '../../pods/kube-events.ts';
import { branchPod, branchWorld, TRUNK } from '../branch/testing/branch-world.ts';
import { PREVENTED_TEARDOWN_REASON } from './teardown-event.ts';

function recorder(): EventRecorder & { got: AgentEvent[] } {
  const got: AgentEvent[] = [];
  return {
    got,
    emit: (e) => got.push(e),
    figures: () => ({ sent: got.length, failed: 0, dropped: 0, queued: 0 }),
    stop: async () => undefined,
  };
}

test('a stale DEL kept from tearing down the new sandbox’s branch ENI is reported on the pod, naming both sandboxes', async () => {
  const events = recorder();
  const w = await branchWorld('strict', () => TRUNK, { events });
  const pod = branchPod(1);
  w.pods.put(pod);
  assert.equal((await w.cni('ADD', pod, 'a279')).exitCode, 0);
  assert.equal((await w.cni('ADD', pod, '30c8')).exitCode, 0);
  assert.equal(events.got.length, 0, 'an event before any teardown was prevented');
  w.ctx.kernel.deleteNetns('/var/run/netns/a279');
  assert.equal((await w.cni('DEL', pod, 'a279', '')).exitCode, 0);
  assert.equal(w.ctx.counters.get('preventedTeardowns'), 1);
  assert.equal(events.got.length, 1);
  const [e] = events.got;
  assert.deepEqual(e?.involved, { kind: 'Pod', namespace: 'default', name: pod.name, uid: pod.uid });
  assert.equal(e?.reason, PREVENTED_TEARDOWN_REASON);
  assert.match(e?.message ?? '', /a279.*30c8/);
  // The last sandbox's DEL tears the binding down: nothing prevented, nothing reported.
  assert.equal((await w.cni('DEL', pod, '30c8')).exitCode, 0);
  assert.equal(events.got.length, 1);
});
