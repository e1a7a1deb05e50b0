import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FakeCloud } from '../testing/fake-cloud.ts';
import { CREATED_BY_TAG, CREATED_BY_VPCNET, INSTANCE_ID_TAG } from './eni-ownership.ts';
import { EniRegistry } from './eni-registry.ts';
import type { EniTagOptions } from './eni-tags.ts';
import { CLUSTER_NAME_TAG, CREATED_AT_TAG, createdAtTagValue } from './eni-tags.ts';
import { DEFAULT_LEAKED_ENI_CLEANUP, type LeakedEniCleanup, LeakedEniSweep } from './leaked-enis.ts';

const GRACE = DEFAULT_LEAKED_ENI_CLEANUP.graceMs;
const T0 = Date.parse('2026-01-01T00:00:00Z');

function world(options: { cleanup?: Partial<LeakedEniCleanup>; eniTags?: EniTagOptions } = {}) {
  const cloud = new FakeCloud();
  const clock = { t: T0, now: () => clock.t };
  const registry = new EniRegistry(clock);
  const logs: string[] = [];
  const record = (level: string) => (msg: string, fields?: Record<string, unknown>) =>
    logs.push(`${level} ${msg} ${JSON.stringify(fields ?? {})}`);
  const sweep = new LeakedEniSweep(
    {
      cloud,
      clock,
      registry,
      metadata: cloud.meta,
      log: { info: record('info'), warn: record('warn'), error: record('error') },
      eniTags: options.eniTags ?? {},
    },
    { ...DEFAULT_LEAKED_ENI_CLEANUP, ...options.cleanup },
  );
  /** A detached ENI, as a crash may leave one: tags and description as given. */
  const plant = async (tags: Record<string, string>, description = 'vpcnet: node i-0fake') =>
    (await cloud.createEni('subnet-1', ['sg-1'], description, tags)).eniId;
  return { cloud, clock, registry, sweep, logs, plant };
}

function ours(cloud: FakeCloud, createdAtMs?: number): Record<string, string> {
  return {
    [INSTANCE_ID_TAG]: cloud.meta.instanceId,
    [CREATED_BY_TAG]: CREATED_BY_VPCNET,
    ...(createdAtMs === undefined ? {} : { [CREATED_AT_TAG]: createdAtTagValue(createdAtMs) }),
  };
}

describe('the leaked-ENI sweep', () => {
  test('deletes only detached vpcnet ENIs of this instance older than the grace, and counts and logs each', async () => {
    const { cloud, sweep, logs, plant } = world();
    const old = T0 - GRACE;
    const leaked = await plant(ours(cloud, old));
    const byDescriptionOnly = await plant(
      { [INSTANCE_ID_TAG]: cloud.meta.instanceId, [CREATED_AT_TAG]: createdAtTagValue(old) },
      'vpcnet: node i-0fake',
    );
    const young = await plant(ours(cloud, T0 - GRACE + 1000));
    const notVpcnet = await plant(
      { [INSTANCE_ID_TAG]: cloud.meta.instanceId, [CREATED_AT_TAG]: createdAtTagValue(old) },
      'aws-K8S-i-0fake',
    );
    const otherNode = await plant({ ...ours(cloud, old), [INSTANCE_ID_TAG]: 'i-0other' });
    const attached = cloud.attachForeignEni({
      deviceIndex: 1,
      tags: ours(cloud, old),
      description: 'vpcnet: x',
    });

    assert.equal(await sweep.sweep(), 2);
    assert.ok(!cloud.enis.has(leaked) && !cloud.enis.has(byDescriptionOnly), 'the old vpcnet ENIs are gone');
    for (const kept of [young, notVpcnet, otherNode, attached])
      assert.ok(cloud.enis.has(kept), `${kept} kept`);
    assert.equal(sweep.deleted, 2);
    assert.equal(logs.filter((l) => l.startsWith('info deleted leaked ENI')).length, 2);
    assert.ok(
      cloud.calls.includes(`describeDetachedEnis ${INSTANCE_ID_TAG} ${cloud.meta.instanceId}`),
      'asks EC2 for this instance’s ENIs only',
    );
  });

  test('an ENI without a createdAt tag ages from its first sighting', async () => {
    const { cloud, clock, sweep, plant } = world();
    const untagged = await plant({ [INSTANCE_ID_TAG]: cloud.meta.instanceId, [CREATED_BY_TAG]: 'vpcnet' });
    assert.equal(await sweep.sweep(), 0, 'first seen now');
    clock.t += GRACE - 1;
    assert.equal(await sweep.sweep(), 0);
    clock.t += 1;
    assert.equal(await sweep.sweep(), 1);
    assert.ok(!cloud.enis.has(untagged));
  });

  test('never deletes an ENI the registry knows: attached, being freed, or already deleted by vpcnet', async () => {
    const { cloud, registry, sweep, plant } = world();
    const beingFreed = await plant(ours(cloud, T0 - GRACE));
    registry.addResumedDetach(beingFreed, 'attach-x', undefined);
    const leftOver = await plant(ours(cloud, T0 - GRACE));
    registry.addLeftOver(leftOver);
    assert.equal(await sweep.sweep(), 0);
    assert.ok(cloud.enis.has(beingFreed) && cloud.enis.has(leftOver));
  });

  test('with CLUSTER_NAME set, an ENI tagged for another cluster is left alone', async () => {
    const { cloud, sweep, plant } = world({ eniTags: { clusterName: 'prod' } });
    const other = await plant({ ...ours(cloud, T0 - GRACE), [CLUSTER_NAME_TAG]: 'staging' });
    const mine = await plant({ ...ours(cloud, T0 - GRACE), [CLUSTER_NAME_TAG]: 'prod' });
    assert.equal(await sweep.sweep(), 1);
    assert.ok(cloud.enis.has(other) && !cloud.enis.has(mine));
  });

  test('without CLUSTER_NAME, an ENI tagged for some cluster is left alone: it may be that cluster’s', async () => {
    const { cloud, sweep, plant } = world();
    const named = await plant({ ...ours(cloud, T0 - GRACE), [CLUSTER_NAME_TAG]: 'staging' });
    const untagged = await plant(ours(cloud, T0 - GRACE));
    assert.equal(await sweep.sweep(), 1);
    assert.ok(cloud.enis.has(named) && !cloud.enis.has(untagged));
  });

  test('runs at start, then every interval; a young ENI brings the next sweep forward to its grace’s end', async () => {
    const { cloud, clock, sweep, plant } = world({ cleanup: { intervalMs: 3_600_000 } });
    const young = await plant(ours(cloud, T0 - 60_000));
    const describes = () => cloud.calls.filter((c) => c.startsWith('describeDetachedEnis')).length;
    await sweep.runIfDue();
    assert.equal(describes(), 1, 'the first sweep runs at once');
    await sweep.runIfDue();
    assert.equal(describes(), 1, 'not again before it is due');
    clock.t += GRACE - 60_000;
    await sweep.runIfDue();
    assert.equal(describes(), 2, 'due when the young ENI passes its grace, not an hour later');
    assert.ok(!cloud.enis.has(young));
    clock.t += 60_000;
    await sweep.runIfDue();
    assert.equal(describes(), 2);
    clock.t += 3_600_000;
    await sweep.runIfDue();
    assert.equal(describes(), 3);
  });

  test('DISABLE_LEAKED_ENI_CLEANUP: no sweep, not even a describe', async () => {
    const { cloud, sweep, plant } = world({ cleanup: { enabled: false } });
    const leaked = await plant(ours(cloud, T0 - GRACE));
    await sweep.runIfDue();
    assert.ok(cloud.enis.has(leaked));
    assert.ok(!cloud.calls.some((c) => c.startsWith('describeDetachedEnis')));
  });

  test('a failing describe or delete is logged and retried at a later sweep', async () => {
    const { cloud, clock, sweep, logs, plant } = world({ cleanup: { intervalMs: 60_000 } });
    const leaked = await plant(ours(cloud, T0 - GRACE));
    cloud.failNext('describeDetachedEnis');
    await sweep.runIfDue();
    assert.ok(logs.some((l) => l.startsWith('warn leaked-ENI sweep failed')));
    clock.t += 60_000;
    cloud.failNext('deleteEni');
    await sweep.runIfDue();
    assert.ok(cloud.enis.has(leaked));
    assert.ok(logs.some((l) => l.startsWith('warn cannot delete leaked ENI yet')));
    clock.t += 60_000;
    await sweep.runIfDue();
    assert.ok(!cloud.enis.has(leaked));
  });
});
