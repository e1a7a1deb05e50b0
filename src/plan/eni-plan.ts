// What vpcnet configures on an ENI's link: up with vpcnet's MTU and, for a secondary ENI, its
// primary address, a route table of its own (link route to the subnet's router, default route
// through it) and the rule that sends traffic from the ENI's primary address through that table.
// The primary ENI is configured by the instance's OS and only brought to vpcnet's MTU.
import { RULE_PRIORITY_FROM_POD } from './kinds/rule.ts';
import type { Resource } from './resource.ts';
import { MAIN_TABLE } from './views.ts';

export interface EniLinkSpec {
  readonly mac: string;
  readonly deviceNumber: number;
  /** ENI primary address, configured /32 on the link. */
  readonly primaryIp: string;
  readonly subnetCidr: string;
  /** The subnet's router (first address + 1). */
  readonly gateway: string;
  readonly routeTable: number;
  readonly mtu: number;
}

/** The resources of an ENI's link `dev` (found by its MAC). */
export function planEniLink(spec: EniLinkSpec, dev: string): Resource[] {
  const out: Resource[] = [{ kind: 'linkConfig', dev, mtu: spec.mtu }];
  if (spec.routeTable === MAIN_TABLE) return out;
  const t = spec.routeTable;
  out.push(
    { kind: 'ifAddress', side: 'node', dev, cidr: `${spec.primaryIp}/32` },
    { kind: 'route', side: 'node', dst: `${spec.gateway}/32`, dev, table: t, scopeLink: true },
    { kind: 'route', side: 'node', dst: 'default', dev, via: spec.gateway, table: t },
    { kind: 'rule', priority: RULE_PRIORITY_FROM_POD, from: `${spec.primaryIp}/32`, table: t },
  );
  return out;
}
