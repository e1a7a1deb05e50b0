// The plan of an IPv6 pod (ENABLE_IPv6): its address out of the primary ENI's /80 as a /128 on the
// pod's interface (no DAD), a default route via a fixed link-local gateway answered by a permanent
// neighbour entry with the host veth's MAC (as IPv4 pods use 169.254.1.1), and the node's /128
// route to it through the host veth. No policy rules: every IPv6 pod address is on the primary ENI,
// whose traffic the main table routes; no SNAT: IPv6 pod addresses are routable in the VPC.
// With IPv4 egress (ENABLE_V4_EGRESS), a second veth `v4if0` with a node-local IPv4 address from
// 169.254.172.0/22 and the IPv4 gateway routes; the node SNATs that range (egress-snat.ts).
import type { AttachmentKey } from './attachment.ts';
import { IPV6_ROUTE_METRIC, ipv6Routing } from './ipv6-routing.ts';
import { hostVethMac, hostVethName, keyedMac, keyedName, podVethMac } from './names.ts';
import { PRIMARY_POD_IF, podInterfaceTable, podSideRouting } from './pod-plan.ts';
import type { Resource } from './resource.ts';
import { MAIN_TABLE } from './views.ts';

export { IPV6_ROUTE_METRIC, ipv6Routing, POD_GATEWAY_V6 } from './ipv6-routing.ts';
/** Node-local IPv4 addresses of IPv6 pods' egress interfaces (upstream's egress plugin's range). */
export const V4_EGRESS_CIDR = '169.254.172.0/22';
/** The pod's interface for IPv4 egress (upstream's egress plugin names it so too). */
export const V4_EGRESS_IF = 'v4if0';

export interface Ipv6PodSpec {
  readonly key: AttachmentKey;
  readonly vethPrefix: string;
  /** The pod's IPv6 address (canonical form, no prefix length). */
  readonly ip: string;
  readonly eniId: string;
  readonly mtu: number;
  /** The node-local IPv4 address of the pod's egress interface; absent: no IPv4 egress. */
  readonly v4EgressIp?: string;
}

/** Host veth name of an attachment's IPv4 egress veth: derived from the key, never the first veth's. */
export function egressVethName(key: AttachmentKey, prefix: string): string {
  return keyedName(prefix, ['v4-egress', key.network, key.containerId, key.ifName]);
}

/** MAC of that veth's host end, derived from the key. */
export function egressVethMac(key: AttachmentKey): string {
  return keyedMac('v4-egress-mac', key);
}

export function planIpv6Pod(spec: Ipv6PodSpec): Resource[] {
  const { key, ip } = spec;
  const hostName = hostVethName(key, spec.vethPrefix);
  const hostMac = hostVethMac(key);
  const ifName = key.ifName;
  // A pod's other interface yields to its primary's default route (no table or rule: IPv6 has no
  // policy rules here, see docs/design.md).
  const metric = IPV6_ROUTE_METRIC + (ifName === PRIMARY_POD_IF ? 0 : podInterfaceTable(ifName));
  const out: Resource[] = [
    { kind: 'vpcAddress', ip, eniId: spec.eniId },
    { kind: 'veth', hostName, hostMac, podIfName: ifName, podMac: podVethMac(key), mtu: spec.mtu },
    ...ipv6Routing(ifName, ip, hostName, hostMac, metric),
  ];
  if (spec.v4EgressIp === undefined) return out;
  const egressHost = egressVethName(key, spec.vethPrefix);
  const egressMac = egressVethMac(key);
  out.push(
    {
      kind: 'veth',
      hostName: egressHost,
      hostMac: egressMac,
      podIfName: V4_EGRESS_IF,
      podMac: keyedMac('v4-egress-pod-mac', key),
      mtu: spec.mtu,
    },
    ...podSideRouting(V4_EGRESS_IF, spec.v4EgressIp, egressMac, true),
    {
      kind: 'route',
      side: 'node',
      dst: `${spec.v4EgressIp}/32`,
      dev: egressHost,
      table: MAIN_TABLE,
      scopeLink: true,
    },
  );
  return out;
}
