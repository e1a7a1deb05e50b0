import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FakeCloud } from '../testing/fake-cloud.ts';
import { CREATED_BY_TAG, CREATED_BY_VPCNET, INSTANCE_ID_TAG } from './eni-ownership.ts';
import { EniRegistry } from './eni-registry.ts';
import type { EniTagOptions } from './eni-tags.ts';
import { CLUSTER_NAME_TAG, CREATED_AT_TAG, createdAtTagValue } from './eni-tags.ts';
import {
  CREATE_IN_DOUBT_EVERY_MS,
  CREATE_IN_DOUBT_LOOK_MS,
  DEFAULT_LEAKED_ENI_CLEANUP,
  type LeakedEniCleanup,
  LeakedEniSweep,
} from './leaked-enis.ts';
import {
  type EniCreateRecord,
  EniJournal,
  type PendingEniRecord,
  type PendingEniRecords,
} from './pending-enis.ts';

const GRACE = DEFAULT_LEAKED_ENI_CLEANUP.graceMs;
const T0 = Date.parse('2026-01-01T00:00:00Z');

/** The ledger's ENI records, in memory (what the sweep reads through the journal). */
class RecordsInMemory implements PendingEniRecords {
  readonly pending = new Map<string, PendingEniRecord>();
  readonly creates = new Map<string, EniCreateRecord>();
  pendingEnis = () => [...this.pending.values()];
  putPendingEni = (r: PendingEniRecord) => void this.pending.set(r.eniId, r);
  removePendingEni = (eniId: string) => this.pending.delete(eniId);
  eniCreates = () => [...this.creates.values()];
  putEniCreate = (r: EniCreateRecord) => void this.creates.set(r.token, r);
  removeEniCreate = (token: string) => this.creates.delete(token);
  commit = async () => {};
}

function world(options: { cleanup?: Partial<LeakedEniCleanup>; eniTags?: EniTagOptions } = {}) {
  const cloud = new FakeCloud();
  const clock = { t: T0, now: () => clock.t };
  const registry = new EniRegistry(clock);
  const logs: string[] = [];
  const record = (level: string) => (msg: string, fields?: Record<string, unknown>) =>
    logs.push(`${level} ${msg} ${JSON.stringify(fields ?? {})}`);
  const log = { info: record('info'), warn: record('warn'), error: record('error') };
  const records = new RecordsInMemory();
  const journal = new EniJournal(records, clock, log);
  const sweep = new LeakedEniSweep(
    { cloud, clock, registry, metadata: cloud.meta, log, eniTags: options.eniTags ?? {}, journal },
    { ...DEFAULT_LEAKED_ENI_CLEANUP, ...options.cleanup },
  );
  /** A detached ENI, as a crash may leave one: tags and description as given. */
  const plant = async (tags: Record<string, string>, description = 'vpcnet: node i-0fake') =>
    (await cloud.createEni('subnet-1', ['sg-1'], description, tags)).eniId;
  return { cloud, clock, registry, sweep, logs, plant, records, journal };
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

describe('creations in doubt (recorded before CreateNetworkInterface, ENI never recorded)', () => {
  /** A creation an earlier agent recorded, `ago` ms before now, in subnet-1. */
  function doubt(records: RecordsInMemory, createdAt: number, ago = 1000): string {
    const token = `token-${createdAt}`;
    records.putEniCreate({ token, createdAt, subnetId: 'subnet-1', since: T0 - ago });
    return token;
  }
  const describes = (cloud: FakeCloud) =>
    cloud.calls.filter((c) => c.startsWith('describeDetachedEnis')).length;

  test('its ENI is deleted at the first look, without the grace, and its record goes', async () => {
    const { cloud, sweep, records, plant, logs } = world();
    doubt(records, T0 - 500);
    const made = await plant(ours(cloud, T0 - 500));
    const young = await plant(ours(cloud, T0 - 60_000));
    assert.equal(await sweep.sweep(), 0, 'not a leak the sweep counts');
    assert.ok(!cloud.enis.has(made), 'deleted at once');
    assert.ok(cloud.enis.has(young), 'another young ENI keeps its grace');
    assert.deepEqual(records.eniCreates(), []);
    assert.ok(
      logs.some((l) => l.startsWith('info deleted the ENI of an interrupted creation') && l.includes(made)),
    );
  });

  test('a describe that lags the creation: looked for every few seconds, deleted once it shows', async () => {
    const { cloud, clock, sweep, records, plant } = world({ cleanup: { intervalMs: 3_600_000 } });
    doubt(records, T0 - 500);
    await sweep.runIfDue();
    assert.equal(describes(cloud), 1);
    assert.equal(records.eniCreates().length, 1, 'kept while it may still show');
    const made = await plant(ours(cloud, T0 - 500));
    clock.t += CREATE_IN_DOUBT_EVERY_MS - 1;
    await sweep.runIfDue();
    assert.equal(describes(cloud), 1, 'not before the next look');
    clock.t += 1;
    await sweep.runIfDue();
    assert.equal(describes(cloud), 2, 'the next look, not the next hourly sweep');
    assert.ok(!cloud.enis.has(made));
    assert.deepEqual(records.eniCreates(), []);
    clock.t += CREATE_IN_DOUBT_EVERY_MS;
    await sweep.runIfDue();
    assert.equal(describes(cloud), 2, 'no look once none is in doubt');
  });

  test('nothing turns up within the look: the record goes (EC2 made none), logged', async () => {
    const { cloud, clock, sweep, records, logs } = world({ cleanup: { intervalMs: 3_600_000 } });
    doubt(records, T0 - 500, 0);
    for (let t = 0; t < CREATE_IN_DOUBT_LOOK_MS; t += CREATE_IN_DOUBT_EVERY_MS) {
      await sweep.runIfDue();
      assert.equal(records.eniCreates().length, 1);
      clock.t += CREATE_IN_DOUBT_EVERY_MS;
    }
    await sweep.runIfDue();
    assert.deepEqual(records.eniCreates(), []);
    assert.equal(describes(cloud), CREATE_IN_DOUBT_LOOK_MS / CREATE_IN_DOUBT_EVERY_MS + 1);
    assert.ok(logs.some((l) => l.startsWith('info no ENI of an interrupted creation turned up')));
  });

  test('a record older than the look (an agent restarted late) still gets a whole look from now', async () => {
    const { cloud, clock, sweep, records } = world();
    doubt(records, T0 - 600_000, 600_000);
    await sweep.runIfDue();
    assert.equal(records.eniCreates().length, 1, 'not dropped at the first look');
    const made = await plant(cloud, T0 - 600_000);
    clock.t += CREATE_IN_DOUBT_EVERY_MS;
    await sweep.runIfDue();
    assert.ok(!cloud.enis.has(made));
    async function plant(c: FakeCloud, at: number) {
      return (await c.createEni('subnet-1', ['sg-1'], 'vpcnet', ours(c, at))).eniId;
    }
  });

  test('an ENI of the same second as a creation this agent is making now is left alone', async () => {
    const { cloud, sweep, records, plant, journal } = world();
    doubt(records, T0 - 500);
    await journal.creating('subnet-1', T0 - 400); // same second, on its way to its attaching record
    const onItsWay = await plant(ours(cloud, T0 - 400));
    await sweep.sweep();
    assert.ok(cloud.enis.has(onItsWay));
    assert.equal(journal.createsInDoubt().length, 1, 'the earlier one is still looked for');
  });

  test('an ENI the ledger records (being attached) is not taken for one in doubt', async () => {
    const { cloud, sweep, records, plant, journal } = world();
    doubt(records, T0 - 500);
    const attaching = await plant(ours(cloud, T0 - 500));
    await journal.attaching(attaching);
    await sweep.sweep();
    assert.ok(cloud.enis.has(attaching));
  });

  test('DISABLE_LEAKED_ENI_CLEANUP: a creation in doubt is still resolved, other leaks are not touched', async () => {
    const { cloud, sweep, records, plant } = world({ cleanup: { enabled: false } });
    doubt(records, T0 - 500);
    const made = await plant(ours(cloud, T0 - 500));
    const leaked = await plant(ours(cloud, T0 - GRACE - 1000));
    await sweep.runIfDue();
    assert.ok(!cloud.enis.has(made));
    assert.ok(cloud.enis.has(leaked));
  });
});
