// CNI DEL and its idempotence in every form the spec allows, at every version: "Plugins MUST accept
// multiple DEL calls for the same (CNI_CONTAINERID, CNI_IFNAME) pair, and return success if the
// interface in question, or any modifications added, are missing" (1.0.0); "When CNI_NETNS and/or
// prevResult are not provided, the plugin should clean up as many resources as possible ... and
// return a successful response" (0.4.0); CNI_NETNS is optional for DEL (1.0.0). prevResult on DEL
// exists from 0.4.0 on.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { labDown, reaches, sh, uniqueLabName } from '../lab-fixture.ts';
import { link } from './kernel-view.ts';
import { ConformanceRuntime } from './runtime.ts';
import { SPEC_VERSIONS, versionsFrom } from './spec-versions.ts';
import { expectQuietSuccess } from './wire-shapes.ts';

describe('conformance: DEL', () => {
  const name = uniqueLabName('vpccfd');
  let rt: ConformanceRuntime;

  before(async () => {
    rt = await ConformanceRuntime.start(name, 'm5.2xlarge');
  });
  after(async () => {
    await labDown(name);
  });

  for (const v of SPEC_VERSIONS) {
    test(`DEL ${v} without prevResult removes all the ADD made and prints nothing`, async () => {
      const pod = await rt.newPod();
      const added = await rt.add({ pod, version: v });
      // What remainsOf looks for is really there while the attachment lives.
      const before = (await rt.remainsOf(pod, added)).map((r) => r.split(' ').slice(0, 2).join(' '));
      for (const kind of ['ledger record', 'host veth', 'host route', 'pod interface'])
        assert.ok(before.includes(kind), `no ${kind} seen for a live attachment: ${before.join('; ')}`);
      expectQuietSuccess(await rt.run('DEL', { pod, version: v }));
      assert.deepEqual(await rt.remainsOf(pod, added), []);
    });

    test(`DEL ${v} of a container vpcnet never saw succeeds`, async () => {
      const pod = await rt.newPod();
      expectQuietSuccess(await rt.run('DEL', { pod, version: v }));
    });

    test(`DEL ${v} twice: the second succeeds and finds nothing left to remove`, async () => {
      const pod = await rt.newPod();
      const added = await rt.add({ pod, version: v });
      expectQuietSuccess(await rt.run('DEL', { pod, version: v }));
      expectQuietSuccess(await rt.run('DEL', { pod, version: v }));
      assert.deepEqual(await rt.remainsOf(pod, added), []);
    });

    test(`DEL ${v} after the sandbox's netns is gone succeeds and removes the host side and the record`, async () => {
      const pod = await rt.newPod();
      const added = await rt.add({ pod, version: v });
      await sh(['ip', 'netns', 'del', pod.netnsName]);
      expectQuietSuccess(await rt.run('DEL', { pod, version: v }));
      assert.deepEqual(await rt.remainsOf(pod, added), []);
    });

    test(`DEL ${v} with CNI_NETNS empty succeeds and removes everything, the pod interface included`, async () => {
      const pod = await rt.newPod();
      const added = await rt.add({ pod, version: v });
      expectQuietSuccess(await rt.run('DEL', { pod, version: v, netns: '' }));
      assert.deepEqual(await rt.remainsOf(pod, added), []);
    });

    test(`DEL ${v} with CNI_NETNS unset succeeds and removes everything, the pod interface included`, async () => {
      const pod = await rt.newPod();
      const added = await rt.add({ pod, version: v });
      expectQuietSuccess(await rt.run('DEL', { pod, version: v, netns: null }));
      assert.deepEqual(await rt.remainsOf(pod, added), []);
    });

    test(`DEL ${v} of one pod leaves another pod of the node working`, async () => {
      const gone = await rt.newPod();
      const kept = await rt.newPod();
      await rt.add({ pod: gone, version: v });
      const other = await rt.add({ pod: kept, version: v });
      expectQuietSuccess(await rt.run('DEL', { pod: gone, version: v }));
      assert.ok((await link(kept.netnsName, 'eth0'))?.ipv4.includes(`${other.ip}/32`));
      assert.ok(await reaches(rt.vpcHost.netns, other.ip), `the VPC host no longer reaches ${other.ip}`);
      await rt.del({ pod: kept, version: v });
    });
  }

  for (const v of versionsFrom('0.4.0')) {
    test(`DEL ${v} with the ADD result as prevResult removes all the ADD made`, async () => {
      const pod = await rt.newPod();
      const added = await rt.add({ pod, version: v });
      expectQuietSuccess(await rt.run('DEL', { pod, version: v, prevResult: added.result }));
      assert.deepEqual(await rt.remainsOf(pod, added), []);
    });

    test(`DEL ${v} twice with prevResult: the second succeeds`, async () => {
      const pod = await rt.newPod();
      const added = await rt.add({ pod, version: v });
      expectQuietSuccess(await rt.run('DEL', { pod, version: v, prevResult: added.result }));
      expectQuietSuccess(await rt.run('DEL', { pod, version: v, prevResult: added.result }));
      assert.deepEqual(await rt.remainsOf(pod, added), []);
    });

    test(`DEL ${v} of an unknown container whose prevResult names a live pod's address leaves that pod working`, async (t) => {
      const live = await rt.newPod();
      const stranger = await rt.newPod();
      const added = await rt.attach(t, { pod: live, version: v });
      expectQuietSuccess(await rt.run('DEL', { pod: stranger, version: v, prevResult: added.result }));
      assert.deepEqual(
        (await rt.attachmentsOf(live.containerId)).map((a) => a.ip),
        [added.ip],
        'the live pod lost its record',
      );
      assert.ok(await reaches(rt.vpcHost.netns, added.ip), `the VPC host no longer reaches ${added.ip}`);
    });
  }
});
