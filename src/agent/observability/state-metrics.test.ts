import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Registry } from 'prom-client';
import { parseExposition, sample } from '../../metrics/testing/exposition.ts';
import { SPOOL_FILE_SUFFIX } from '../../spool/format.ts';
import type { AgentStateSources } from './state-metrics.ts';
import { registerStateMetrics } from './state-metrics.ts';

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** Sources whose values the test changes between scrapes. */
function sources(spoolDir: string) {
  const state = {
    stats: { total: 14, assigned: 3, cooling: 2, available: 9, enis: 2 },
    unmanaged: 1,
    blocked: null as string | null,
    differences: { addressAdded: 2, addressRemoved: 0, heldAddressMissing: 0, eniGone: 1, eniAdopted: 0 },
    syncFailures: 4,
    counters: { preventedTeardowns: 5, holderTakeovers: 2, supersededBindings: 0 } as Record<string, number>,
    attachments: 3,
    deadPods: 7,
    reconcileFailures: 1,
    prefixes: undefined as { enabled: boolean; mode: string; fallbacks: number } | undefined,
  };
  const s: AgentStateSources = {
    now: () => 0,
    // The pool's ENIs and addresses feed pool-metrics.ts, tested there with a real pool.
    pool: { stats: () => state.stats, enis: () => [], addresses: () => new Map() },
    manager: {
      enis: () =>
        Array.from({ length: state.unmanaged }, () => ({ state: 'unmanaged' })) as ReturnType<
          AgentStateSources['manager']['enis']
        >,
      health: () =>
        ({
          growth:
            state.blocked === null ? { blocked: null } : { blocked: state.blocked, since: 0, failures: 1 },
          sync: {
            failures: state.syncFailures,
            differences: state.differences,
            takenFromPods: { enis: 0, addresses: 0 },
          },
          prefixes: state.prefixes,
          singles: { named: 7, collisions: 2, counted: 3, namedPrefixes: 0, namedPrimaries: 0 },
        }) as unknown as ReturnType<AgentStateSources['manager']['health']>,
      prefixesOf: () => [],
    },
    limits: { maxEnis: 4, ipsPerEni: 15 },
    targets: { maxEni: 3 } as AgentStateSources['targets'],
    counters: {
      get: (e) => state.counters[e] ?? 0,
      rejectedAnnotations: () => ({
        notOnTrunk: 3,
        contradictsEc2: 0,
        regularAddress: 1,
        heldByLivePod: 2,
        apiUnreachable: 0,
      }),
    },
    attachments: () => state.attachments,
    spoolDir,
    deadPodCollections: () => state.deadPods,
    reconcileFailures: () => state.reconcileFailures,
  };
  return { state, s };
}

async function scrape(r: Registry) {
  return parseExposition(await r.metrics());
}

test('pool, ENI and event gauges are read from the agent’s state when scraped, not before', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-metrics-'));
  dirs.push(dir);
  const { state, s } = sources(join(dir, 'no-spool-yet'));
  const r = new Registry();
  registerStateMetrics(r, s);
  let v = await scrape(r);
  assert.equal(sample(v, 'awscni_total_ip_addresses'), 14);
  assert.equal(sample(v, 'awscni_assigned_ip_addresses'), 3);
  assert.equal(sample(v, 'vpcnet_cooling_ip_addresses'), 2);
  assert.equal(sample(v, 'vpcnet_available_ip_addresses'), 9);
  assert.equal(sample(v, 'awscni_eni_allocated'), 2);
  assert.equal(
    sample(v, 'awscni_eni_max'),
    2,
    'MAX_ENI 3 lowers the type’s 4; one unmanaged ENI takes a slot',
  );
  assert.equal(sample(v, 'awscni_ip_max'), 28, '2 ENIs × 14 secondary addresses');
  assert.equal(sample(v, 'vpcnet_attachments'), 3);
  assert.equal(sample(v, 'vpcnet_pool_growth_blocked'), 0);
  assert.equal(sample(v, 'awscni_reconcile_count', { fn: 'addressAdded' }), 2);
  assert.equal(sample(v, 'awscni_reconcile_count', { fn: 'eniGone' }), 1);
  assert.equal(sample(v, 'awscni_ipamd_error_count', { fn: 'ec2Sync' }), 4);
  assert.equal(sample(v, 'awscni_ipamd_error_count', { fn: 'reconcile' }), 1);
  assert.equal(sample(v, 'vpcnet_prevented_teardowns_total'), 5);
  assert.equal(sample(v, 'vpcnet_branch_binding_events_total', { event: 'holderTakeover' }), 2);
  assert.equal(sample(v, 'vpcnet_dead_pod_collections_total'), 7);
  assert.equal(sample(v, 'vpcnet_secondary_ip_assignments_total', { how: 'named' }), 7);
  assert.equal(sample(v, 'vpcnet_secondary_ip_assignments_total', { how: 'counted' }), 3);
  assert.equal(sample(v, 'vpcnet_named_ip_collisions_total'), 2);
  assert.equal(sample(v, 'vpcnet_subnet_census_leader'), 0, 'no census runs');
  assert.equal(sample(v, 'vpcnet_annotation_rejected_total', { reason: 'notOnTrunk' }), 3);
  assert.equal(sample(v, 'vpcnet_annotation_rejected_total', { reason: 'heldByLivePod' }), 2);
  assert.equal(
    sample(v, 'vpcnet_annotation_rejected_total', { reason: 'contradictsEc2' }),
    0,
    'every reason is exported',
  );
  assert.equal(sample(v, 'vpcnet_del_spool_depth'), 0, 'no spool dir yet: nothing spooled');

  state.stats = { ...state.stats, assigned: 4, available: 8 };
  state.blocked = 'RequestLimitExceeded';
  state.counters.preventedTeardowns = 6;
  v = await scrape(r);
  assert.equal(sample(v, 'awscni_assigned_ip_addresses'), 4, 'the next scrape reads the state again');
  assert.equal(sample(v, 'vpcnet_pool_growth_blocked'), 1);
  assert.equal(
    sample(v, 'vpcnet_prevented_teardowns_total'),
    6,
    'a total is the source’s, never added twice',
  );
});

test('the DEL spool depth counts pending entries and, apart, those set aside for an operator', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-metrics-'));
  dirs.push(dir);
  const spool = join(dir, 'del-spool');
  await mkdir(spool);
  for (const name of [
    `0001${SPOOL_FILE_SUFFIX}`,
    `0002${SPOOL_FILE_SUFFIX}`,
    `0003${SPOOL_FILE_SUFFIX}.failed`,
  ])
    await writeFile(join(spool, name), '{}');
  await writeFile(join(spool, `0004${SPOOL_FILE_SUFFIX}.rejected`), '');
  const r = new Registry();
  registerStateMetrics(r, sources(spool).s);
  const v = await scrape(r);
  assert.equal(sample(v, 'vpcnet_del_spool_depth'), 2);
  assert.equal(sample(v, 'vpcnet_del_spool_set_aside', { reason: 'failed' }), 1);
  assert.equal(sample(v, 'vpcnet_del_spool_set_aside', { reason: 'rejected' }), 1);
});

test('prefix mode: the fallback gauge and total follow the pool, and awscni_ip_max counts 16 per slot', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-metrics-'));
  dirs.push(dir);
  const { state, s } = sources(join(dir, 'no-spool'));
  const r = new Registry();
  registerStateMetrics(r, s);
  state.prefixes = { enabled: true, mode: 'prefixes', fallbacks: 0 };
  let v = await scrape(r);
  assert.equal(sample(v, 'vpcnet_prefix_fallback'), 0);
  assert.equal(sample(v, 'awscni_ip_max'), 2 * 14 * 16);
  state.prefixes = { enabled: true, mode: 'secondaryIpFallback', fallbacks: 1 };
  v = await scrape(r);
  assert.equal(sample(v, 'vpcnet_prefix_fallback'), 1);
  assert.equal(sample(v, 'vpcnet_prefix_fallbacks_total'), 1);
});
