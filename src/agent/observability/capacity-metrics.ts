// The capacity the cluster can see, read when Prometheus scrapes: the subnet census this agent
// knows (free /28s and free addresses per subnet, and how old each census is), whether this agent
// is the one that takes it, and how the pool used it (prefix asks the census spared, secondary IPs
// named inside broken /28s, named ones another tenant took first). Registered whether the census
// runs or not: without it the labelled series are empty and the totals stay 0.
import type { Registry } from 'prom-client';
import { Gauge } from 'prom-client';
import type { CensusAssignFigures } from '../../ipam/census/census-assigner.ts';
import type { CensusView } from '../../ipam/census/subnet-census.ts';
import { gaugeFrom, totalFrom } from '../../metrics/read-at-scrape.ts';

export interface CapacitySources {
  readonly now: () => number;
  /** The census loop, when it runs. */
  readonly census?: { views(): CensusView[]; state(): { readonly role: string } };
  /** The node's readiness (VPCNET_NODE_READINESS), when it is kept. */
  readonly readiness?: {
    state(): { readonly ready: boolean; readonly reason: string; readonly tainted: boolean } | undefined;
  };
  readonly singles: () => CensusAssignFigures;
  readonly censusSkips: () => number;
}

export function registerCapacityMetrics(registry: Registry, s: CapacitySources): void {
  bySubnet(
    registry,
    'vpcnet_subnet_free_prefixes',
    'Aligned /28s a prefix-delegating node can still get, by subnet (subnet census)',
    s,
    (v) => v.figures().freePrefixes,
  );
  bySubnet(
    registry,
    'vpcnet_subnet_free_addresses',
    'Addresses a pod can still be given, outside explicit CIDR reservations, by subnet (subnet census)',
    s,
    (v) => v.figures().freeAddresses,
  );
  bySubnet(
    registry,
    'vpcnet_subnet_census_age_seconds',
    'Seconds since EC2 was read for the subnet census this agent knows, by subnet',
    s,
    (v) => Math.max(0, (s.now() - v.census.takenAt) / 1000),
  );
  gaugeFrom(
    registry,
    'vpcnet_subnet_census_leader',
    '1 while this agent holds the census Lease and reads EC2 for the cluster',
    () => (s.census?.state().role === 'leader' ? 1 : 0),
  );
  new Gauge<'reason'>({
    name: 'vpcnet_node_network_ready',
    help: 'The node condition vpcnet.io/NetworkReady: 1 True, 0 False, with its reason (no series while VPCNET_NODE_READINESS=off)',
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      this.reset();
      const r = s.readiness?.state();
      if (r !== undefined) this.set({ reason: r.reason }, r.ready ? 1 : 0);
    },
  });
  gaugeFrom(
    registry,
    'vpcnet_node_ip_exhausted_taint',
    '1 while the agent keeps vpcnet.io/ip-exhausted:NoSchedule on its node (VPCNET_NODE_READINESS=taint)',
    () => (s.readiness?.state()?.tainted === true ? 1 : 0),
  );
  totalFrom(
    registry,
    {
      name: 'vpcnet_secondary_ip_assignments_total',
      help: 'Secondary IPs assigned, by how: named inside broken /28s from the census, or by count (EC2 picks)',
      labelNames: ['how'],
    },
    () => [
      [{ how: 'named' }, s.singles().named],
      [{ how: 'counted' }, s.singles().counted],
    ],
  );
  totalFrom(
    registry,
    {
      name: 'vpcnet_census_named_total',
      help: 'Prefixes and new ENI primary IPs the pool named from the census, by what',
      labelNames: ['what'],
    },
    () => [
      [{ what: 'prefix' }, s.singles().namedPrefixes],
      [{ what: 'eniPrimaryIp' }, s.singles().namedPrimaries],
    ],
  );
  totalFrom(
    registry,
    {
      name: 'vpcnet_named_ip_collisions_total',
      help: 'Named secondary IP assignments EC2 refused: an address was taken since the census',
    },
    () => [[{}, s.singles().collisions]],
  );
  totalFrom(
    registry,
    {
      name: 'vpcnet_prefix_census_skips_total',
      help: 'Prefix asks not sent because the census showed the subnet without a free /28',
    },
    () => [[{}, s.censusSkips()]],
  );
}

function bySubnet(
  registry: Registry,
  name: string,
  help: string,
  s: CapacitySources,
  value: (v: CensusView) => number,
): void {
  new Gauge<'subnet'>({
    name,
    help,
    labelNames: ['subnet'],
    registers: [registry],
    collect() {
      this.reset();
      for (const v of s.census?.views() ?? []) this.set({ subnet: v.census.subnetId }, value(v));
    },
  });
}
