// Gauges and totals read from the agent's state when Prometheus scrapes, not kept up to date by
// every operation: a scrape every few seconds costs less than a gauge update on every ADD and DEL,
// and the values are the ones `vpcnetctl state` shows, never a second bookkeeping of them.
import { Gauge, type Registry } from 'prom-client';
import type { InstanceTypeLimits } from '../../cloud/cloud.ts';
import type { AddressPool } from '../../ipam/pool/pool.ts';
import type { PoolManager } from '../../ipam/pool/pool-manager.ts';
import { effectiveMaxEnis, secondaryIpsPerEni, type WarmPoolTargets } from '../../ipam/pool/targets.ts';
import { gaugeFrom, totalFrom } from '../../metrics/read-at-scrape.ts';
import { type SpoolDepth, spoolDepth } from '../../spool/depth.ts';
import type { AgentCounters } from '../stats.ts';
import { type CapacitySources, registerCapacityMetrics } from './capacity-metrics.ts';
import { registerPoolUsageMetrics } from './pool-metrics.ts';

export interface AgentStateSources {
  readonly now: () => number;
  readonly pool: Pick<AddressPool, 'stats' | 'enis' | 'addresses'>;
  readonly manager: Pick<PoolManager, 'enis' | 'health' | 'prefixesOf'>;
  readonly limits: InstanceTypeLimits;
  readonly targets: WarmPoolTargets;
  readonly counters: Pick<AgentCounters, 'get' | 'rejectedAnnotations'>;
  /** Live attachments (ledger records). */
  readonly attachments: () => number;
  readonly spoolDir: string;
  /** Attachments the dead-pod GC removed so far (absent: the GC is off). */
  readonly deadPodCollections?: () => number;
  /** Failed repairs and removals of the reconcile loop so far. */
  readonly reconcileFailures: () => number;
  /** The subnet census, when it runs (capacity-metrics.ts). */
  readonly census?: CapacitySources['census'];
  /** What the node says of its readiness, when it does. */
  readonly readiness?: CapacitySources['readiness'];
}

export function registerStateMetrics(registry: Registry, s: AgentStateSources): void {
  const stats = () => s.pool.stats(s.now());
  const maxEnis = () =>
    effectiveMaxEnis(s.limits, s.targets) - s.manager.enis().filter((e) => e.state === 'unmanaged').length;
  gaugeFrom(
    registry,
    'awscni_total_ip_addresses',
    'The total number of IP addresses in the pool',
    () => stats().total,
  );
  gaugeFrom(
    registry,
    'awscni_assigned_ip_addresses',
    'The number of IP addresses assigned to pods',
    () => stats().assigned,
  );
  gaugeFrom(
    registry,
    'vpcnet_cooling_ip_addresses',
    'Freed addresses still in their cooldown',
    () => stats().cooling,
  );
  gaugeFrom(
    registry,
    'vpcnet_available_ip_addresses',
    'Addresses an ADD could take now',
    () => stats().available,
  );
  gaugeFrom(registry, 'awscni_eni_allocated', 'The number of ENIs in the pool', () => stats().enis);
  gaugeFrom(
    registry,
    'awscni_eni_max',
    'The maximum number of ENIs that can be attached to the instance, accounting for unmanaged ENIs',
    maxEnis,
  );
  gaugeFrom(
    registry,
    'awscni_ip_max',
    'The maximum number of IP addresses that can be allocated to the instance',
    // In prefix mode each slot holds a /28: 16 addresses.
    () => maxEnis() * secondaryIpsPerEni(s.limits) * (s.manager.health().prefixes?.enabled ? 16 : 1),
  );
  gaugeFrom(registry, 'vpcnet_attachments', 'Attachments in the ledger (pod interfaces)', s.attachments);
  gaugeFrom(
    registry,
    'vpcnet_pool_growth_blocked',
    '1 while the pool cannot grow (EC2 failing or throttling); ADDs are served from the warm pool meanwhile',
    () => (s.manager.health().growth.blocked === null ? 0 : 1),
  );
  gaugeFrom(
    registry,
    'vpcnet_prefix_fallback',
    '1 while prefix mode has fallen back to secondary IPs because the subnet has no free /28 (InsufficientCidrBlocks)',
    () => (s.manager.health().prefixes?.mode === 'secondaryIpFallback' ? 1 : 0),
  );
  totalFrom(
    registry,
    { name: 'vpcnet_prefix_fallbacks_total', help: 'Times prefix mode fell back to secondary IPs' },
    () => [[{}, s.manager.health().prefixes?.fallbacks ?? 0]],
  );
  registerPoolUsageMetrics(registry, s);
  registerCapacityMetrics(registry, {
    now: s.now,
    ...(s.census === undefined ? {} : { census: s.census }),
    ...(s.readiness === undefined ? {} : { readiness: s.readiness }),
    singles: () => s.manager.health().singles,
    censusSkips: () => s.manager.health().prefixes?.censusSkips ?? 0,
  });
  registerSpoolGauges(registry, s.spoolDir);
  totalFrom(
    registry,
    {
      name: 'awscni_reconcile_count',
      help: "Differences between the pool and EC2's view that the EC2 sync acted on, by kind",
      labelNames: ['fn'],
    },
    () => Object.entries(s.manager.health().sync.differences).map(([fn, n]) => [{ fn }, n] as const),
  );
  totalFrom(
    registry,
    {
      name: 'awscni_ipamd_error_count',
      help: "Errors of the agent's background work, by function",
      labelNames: ['fn'],
    },
    () => [
      [{ fn: 'ec2Sync' }, s.manager.health().sync.failures],
      [{ fn: 'reconcile' }, s.reconcileFailures()],
    ],
  );
  totalFrom(
    registry,
    {
      name: 'vpcnet_prevented_teardowns_total',
      help: "DELs of a replaced sandbox that left the live sandbox's branch ENI resources alone (upstream #1644)",
    },
    () => [[{}, s.counters.get('preventedTeardowns')]],
  );
  totalFrom(
    registry,
    {
      name: 'vpcnet_branch_binding_events_total',
      help: 'Hand-overs of a branch ENI binding between sandboxes of one pod, by event',
      labelNames: ['event'],
    },
    () => [
      [{ event: 'holderTakeover' }, s.counters.get('holderTakeovers')],
      [{ event: 'supersededBinding' }, s.counters.get('supersededBindings')],
    ],
  );
  totalFrom(
    registry,
    {
      name: 'vpcnet_annotation_rejected_total',
      help: 'vpc.amazonaws.com/pod-eni annotations refused before anything was built from them, by reason',
      labelNames: ['reason'],
    },
    () => Object.entries(s.counters.rejectedAnnotations()).map(([reason, n]) => [{ reason }, n] as const),
  );
  const deadPods = s.deadPodCollections;
  if (deadPods !== undefined)
    totalFrom(
      registry,
      { name: 'vpcnet_dead_pod_collections_total', help: 'Attachments of dead pods the dead-pod GC removed' },
      () => [[{}, deadPods()]],
    );
}

function registerSpoolGauges(registry: Registry, dir: string): void {
  // One directory read serves both gauges of a scrape.
  let reading: Promise<SpoolDepth> | undefined;
  const read = () => {
    reading ??= spoolDepth(dir).finally(() => {
      reading = undefined;
    });
    return reading;
  };
  new Gauge({
    name: 'vpcnet_del_spool_depth',
    help: 'DELs the plugin spooled that the agent has not applied yet',
    registers: [registry],
    async collect() {
      this.set((await read()).pending);
    },
  });
  new Gauge<'reason'>({
    name: 'vpcnet_del_spool_set_aside',
    help: 'Spool entries set aside for an operator (failed: can never apply; rejected: not a spooled DEL)',
    labelNames: ['reason'],
    registers: [registry],
    async collect() {
      const depth = await read();
      this.set({ reason: 'failed' }, depth.failed);
      this.set({ reason: 'rejected' }, depth.rejected);
    },
  });
}
