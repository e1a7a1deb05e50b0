// "Plugins must handle being executed concurrently across different containers" (spec 1.0.0,
// Lifecycle & Ordering): 20 ADDs of distinct pods at once, four at each spec version, then their 20
// DELs at once. m5.4xlarge: its primary ENI alone holds more addresses than the 20 pods need.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { labDown, reaches, type TestPod, uniqueLabName } from '../lab-fixture.ts';
import { link } from './kernel-view.ts';
import { type Added, ConformanceRuntime } from './runtime.ts';
import { SPEC_VERSIONS } from './spec-versions.ts';
import { expectQuietSuccess } from './wire-shapes.ts';

const PODS = 20;

interface Running {
  readonly pod: TestPod;
  readonly version: string;
  readonly added: Added;
}

describe('conformance: concurrent pods', () => {
  const name = uniqueLabName('vpccfp');
  let rt: ConformanceRuntime;
  const running: Running[] = [];

  before(async () => {
    rt = await ConformanceRuntime.start(name, 'm5.4xlarge');
  });
  after(async () => {
    await labDown(name);
  });

  test(`${PODS} parallel ADDs of distinct pods (${PODS / SPEC_VERSIONS.length} per version) get distinct addresses that reach the VPC host`, async () => {
    const pods: TestPod[] = [];
    for (let i = 0; i < PODS; i++) pods.push(await rt.newPod());
    const outcomes = await Promise.allSettled(
      pods.map(async (pod, i) => {
        const version = SPEC_VERSIONS[i % SPEC_VERSIONS.length]!;
        const added = await rt.add({ pod, version });
        running.push({ pod, version, added });
        return added;
      }),
    );
    const failed = outcomes.flatMap((o) => (o.status === 'rejected' ? [String(o.reason)] : []));
    assert.deepEqual(failed, [], `${failed.length} of ${PODS} ADDs failed`);
    const ips = running.map((r) => r.added.ip);
    assert.equal(new Set(ips).size, PODS, `addresses not distinct: ${ips.sort().join(', ')}`);
    const records = (await rt.state()).attachments;
    for (const r of running) {
      assert.ok(
        records.some((a) => a.key.containerId === r.pod.containerId && a.ip === r.added.ip),
        `no ledger record for ${r.pod.containerId}`,
      );
    }
    const unreachable = (
      await Promise.all(
        running.map(async (r) =>
          (await reaches(r.pod.netnsName, rt.vpcHost.ip)) && (await reaches(rt.vpcHost.netns, r.added.ip))
            ? []
            : [r.added.ip],
        ),
      )
    ).flat();
    assert.deepEqual(unreachable, [], 'pods without traffic to and from the VPC host');
  });

  test(`${PODS} parallel DELs leave no ledger record, host veth, route or pod interface of those pods`, async () => {
    assert.equal(running.length, PODS, 'the ADD test did not leave its pods');
    const runs = await Promise.all(running.map((r) => rt.run('DEL', { pod: r.pod, version: r.version })));
    for (const run of runs) expectQuietSuccess(run);
    const left = (await Promise.all(running.map((r) => rt.remainsOf(r.pod, r.added)))).flat();
    assert.deepEqual(left, []);
    for (const r of running) assert.equal(await link(r.pod.netnsName, 'eth0'), undefined);
  });
});
