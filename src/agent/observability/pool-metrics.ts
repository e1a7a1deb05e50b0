// Upstream's series of how the pool's addresses are used, read from the pool when Prometheus
// scrapes: assigned addresses per ENI and per CIDR (a secondary IP is its own /32, a delegated
// prefix its /28), the prefixes held, and what EC2 took away from pods (the EC2 sync's figures).
// An ENI or CIDR that left the pool leaves the scrape too.
import { Gauge, type Registry } from 'prom-client';
import { cidrContains, type Ipv4Cidr, parseCidr, parseIpv4 } from '../../infra/ipv4.ts';
import type { AddressPool } from '../../ipam/pool/pool.ts';
import type { PoolManager } from '../../ipam/pool/pool-manager.ts';
import { gaugeFrom, totalFrom } from '../../metrics/read-at-scrape.ts';

export interface PoolUsageSources {
  readonly pool: Pick<AddressPool, 'enis' | 'addresses'>;
  readonly manager: Pick<PoolManager, 'prefixesOf' | 'health'>;
}

/** Assigned addresses per CIDR of the pool, every CIDR listed (0 when none is assigned). */
export function assignedPerCidr(s: PoolUsageSources): Map<string, number> {
  const counts = new Map<string, number>();
  for (const { eniId } of s.pool.enis()) {
    const prefixes: [string, Ipv4Cidr][] = s.manager.prefixesOf(eniId).map((p) => [p, parseCidr(p)]);
    for (const [ip, state] of s.pool.addresses(eniId)) {
      const address = parseIpv4(ip);
      const cidr = prefixes.find(([, c]) => cidrContains(c, address))?.[0] ?? `${ip}/32`;
      counts.set(cidr, (counts.get(cidr) ?? 0) + (state.kind === 'assigned' ? 1 : 0));
    }
  }
  return counts;
}

export function registerPoolUsageMetrics(registry: Registry, s: PoolUsageSources): void {
  labelledGauge(registry, 'awscni_assigned_ip_per_eni', 'The number of assigned IPs, by ENI', 'eni', () =>
    s.pool.enis().map(({ eniId }) => {
      let assigned = 0;
      for (const state of s.pool.addresses(eniId).values()) if (state.kind === 'assigned') assigned++;
      return [eniId, assigned];
    }),
  );
  labelledGauge(
    registry,
    'awscni_assigned_ip_per_cidr',
    'The number of IP addresses assigned, by CIDR (a secondary IP /32, a prefix /28)',
    'cidr',
    () => assignedPerCidr(s),
  );
  gaugeFrom(registry, 'awscni_total_ipv4_prefixes', 'The total number of IPv4 prefixes in the pool', () =>
    s.pool.enis().reduce((n, { eniId }) => n + s.manager.prefixesOf(eniId).length, 0),
  );
  const taken = () => s.manager.health().sync.takenFromPods;
  totalFrom(
    registry,
    {
      name: 'awscni_force_removed_enis',
      help: 'The number of ENIs EC2 no longer lists as attached while pods held addresses on them',
    },
    () => [[{}, taken().enis]],
  );
  totalFrom(
    registry,
    {
      name: 'awscni_force_removed_ips',
      help: 'The number of addresses pods held that EC2 took away (alone, or with their ENI)',
    },
    () => [[{}, taken().addresses]],
  );
}

/** A gauge with one label, its series set afresh at each scrape. */
function labelledGauge<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  label: L,
  read: () => Iterable<readonly [string, number]>,
): void {
  new Gauge<L>({
    name,
    help,
    labelNames: [label],
    registers: [registry],
    collect() {
      this.reset();
      for (const [value, n] of read()) this.set({ [label]: value } as Record<L, string>, n);
    },
  });
}
