// IPv6 mode's figures for Prometheus, read from the IPv6 source at scrape time as the IPv4 pool's
// are (observability/state-metrics.ts): the counterparts of awscni_assigned_ip_addresses and
// vpcnet_cooling_ip_addresses, and whether the node holds its /80 (0 while pods get code 11).
import type { Registry } from 'prom-client';
import type { Ipv6PrefixPool } from '../../ipam/prefixes/ipv6-prefix-pool.ts';
import { gaugeFrom } from '../../metrics/read-at-scrape.ts';

export function registerIpv6Metrics(registry: Registry, source: Pick<Ipv6PrefixPool, 'view'>): void {
  const gauges: [string, string, () => number][] = [
    [
      'vpcnet_ipv6_assigned_addresses',
      'IPv6 addresses of the node /80 assigned to pods',
      () => source.view().assigned,
    ],
    [
      'vpcnet_ipv6_cooling_addresses',
      'Freed IPv6 addresses still in their cooldown',
      () => source.view().cooling,
    ],
    [
      'vpcnet_ipv6_prefix_held',
      '1 while the node holds its IPv6 /80 on the primary ENI; 0 while IPv6 pods cannot get addresses',
      () => (source.view().prefix === null ? 0 : 1),
    ],
  ];
  for (const [name, help, read] of gauges) gaugeFrom(registry, name, help, read);
}
