// IPv6 egress of IPv4 pods (ENABLE_V6_EGRESS, upstream's egress-v6 plugin): a second veth whose pod
// end `v6if0` has a node-local address of fd00::ac:0/118 and a default route via fe80::1, and the
// node's /128 route back to it; the node SNATs the range to its own IPv6 address (ip-cli/
// egress-snat.ts). The IPv4 twin is IPv6 mode's v4if0 (ipv6-pod-plan.ts). Its veth's host end is
// named from the attachment key like the pod's own veth, with a different hash.
import type { AttachmentKey } from './attachment.ts';
import { IPV6_ROUTE_METRIC, ipv6Routing } from './ipv6-routing.ts';
import { keyedMac, keyedName } from './names.ts';
import type { Resource } from './resource.ts';

/** Node-local IPv6 addresses of IPv4 pods' egress interfaces (upstream's egress plugin's range). */
export const V6_EGRESS_CIDR = 'fd00::ac:0/118';
/** The pod's interface for IPv6 egress (upstream's egress plugin names it so too). */
export const V6_EGRESS_IF = 'v6if0';

/** Host veth name of an attachment's IPv6 egress veth: derived from the key, never the first veth's. */
export function v6EgressVethName(key: AttachmentKey, prefix: string): string {
  return keyedName(prefix, ['v6-egress', key.network, key.containerId, key.ifName]);
}

/** MAC of that veth's host end, derived from the key. */
export function v6EgressVethMac(key: AttachmentKey): string {
  return keyedMac('v6-egress-mac', key);
}

export interface V6EgressSpec {
  readonly key: AttachmentKey;
  readonly vethPrefix: string;
  /** The pod's address in fd00::ac:0/118 (canonical form, no prefix length). */
  readonly ip: string;
  readonly mtu: number;
}

/** What an IPv4 pod's plan gains with IPv6 egress. */
export function v6EgressResources(spec: V6EgressSpec): Resource[] {
  const hostName = v6EgressVethName(spec.key, spec.vethPrefix);
  const hostMac = v6EgressVethMac(spec.key);
  return [
    {
      kind: 'veth',
      hostName,
      hostMac,
      podIfName: V6_EGRESS_IF,
      podMac: keyedMac('v6-egress-pod-mac', spec.key),
      mtu: spec.mtu,
    },
    // The pod's only IPv6 routes: its default route needs no metric of its own.
    ...ipv6Routing(V6_EGRESS_IF, spec.ip, hostName, hostMac, IPV6_ROUTE_METRIC),
  ];
}
