// The IPv6 side of a pod interface, shared by an IPv6 pod's interface (ipv6-pod-plan.ts) and an
// IPv4 pod's IPv6 egress interface (v6-egress-plan.ts).
import type { Resource } from './resource.ts';
import { MAIN_TABLE } from './views.ts';

/** An IPv6 pod's default gateway: link-local, answered by a permanent neighbour entry. */
export const POD_GATEWAY_V6 = 'fe80::1';
/**
 * The kernel's metric for an IPv6 route added without one: the plan names it, so that the route
 * read back (which always carries a metric) is the route recorded.
 */
export const IPV6_ROUTE_METRIC = 1024;

/**
 * An IPv6 address `ip` on the pod's `ifName` behind the host veth `hostName`: the /128 (no DAD),
 * a default route via fe80::1 with `metric`, the permanent neighbour answering it with the host
 * veth's MAC, and the node's /128 route to the pod. An IPv6 pod's interface and an IPv4 pod's
 * IPv6 egress interface (v6-egress-plan.ts) are built alike.
 */
export function ipv6Routing(
  ifName: string,
  ip: string,
  hostName: string,
  hostMac: string,
  metric: number,
): Resource[] {
  return [
    { kind: 'ipv6Address', side: 'pod', dev: ifName, cidr: `${ip}/128` },
    {
      kind: 'route',
      side: 'pod',
      dst: 'default',
      dev: ifName,
      via: POD_GATEWAY_V6,
      table: MAIN_TABLE,
      metric,
    },
    { kind: 'neighbour', side: 'pod', dev: ifName, ip: POD_GATEWAY_V6, lladdr: hostMac },
    {
      kind: 'route',
      side: 'node',
      dst: `${ip}/128`,
      dev: hostName,
      table: MAIN_TABLE,
      metric: IPV6_ROUTE_METRIC,
    },
  ];
}
