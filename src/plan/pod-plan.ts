// The pod plan: from what an ADD decided (key, address, ENI table, MTU) to the complete list of
// resources the attachment will own. ADD records this list before it touches the kernel and then
// creates exactly it; DEL, CHECK and the reconcile loop work from the recorded list alone.
import { createHash } from 'node:crypto';
import type { AttachmentKey } from './attachment.ts';
import { RULE_PRIORITY_FROM_POD, RULE_PRIORITY_TO_POD } from './kinds/rule.ts';
import { hostVethMac, hostVethName, podVethMac } from './names.ts';
import type { Resource } from './resource.ts';
import { v6EgressResources } from './v6-egress-plan.ts';
import { MAIN_TABLE } from './views.ts';

export { RULE_PRIORITY_FROM_POD, RULE_PRIORITY_TO_POD } from './kinds/rule.ts';
export { MAIN_TABLE } from './views.ts';

/** The pod's default gateway: link-local, answered by a permanent neighbour entry. */
export const POD_GATEWAY = '169.254.1.1';

export interface RegularPodSpec {
  readonly key: AttachmentKey;
  /** Prefix of the host veth name (the network's config may choose its own). */
  readonly vethPrefix: string;
  readonly ip: string;
  readonly eniId: string;
  /** Route table of the address's ENI; MAIN_TABLE for the primary ENI (no from-rule then). */
  readonly routeTable: number;
  readonly mtu: number;
  /** The address joins the SNAT set (traffic leaving the VPC gets the node's IP). */
  readonly snat: boolean;
  /**
   * A pod another CNI wired, adopted in place (src/agent/adoption): the veth's names and MACs as
   * found, instead of those derived from the key.
   */
  readonly foundVeth?: { readonly hostName: string; readonly hostMac: string; readonly podMac: string };
  /** The pod's IPv6 egress address (ENABLE_V6_EGRESS, v6-egress-plan.ts); absent: none. */
  readonly v6EgressIp?: string;
}

/** The pod interface whose routes are the pod's defaults: kubelet, containerd and podman name it eth0. */
export const PRIMARY_POD_IF = 'eth0';
/** Inside a pod, route tables of its other interfaces (derived from their names) lie in this range. */
export const POD_IF_TABLE_BASE = 1000;
const POD_IF_TABLE_COUNT = 30000;

/** The route table (and route metric) of a pod's other interface: stable for its name. */
export function podInterfaceTable(ifName: string): number {
  const digest = createHash('sha256').update(`pod-if ${ifName}`).digest();
  return POD_IF_TABLE_BASE + (digest.readUInt32BE(0) % POD_IF_TABLE_COUNT);
}

/**
 * The pod side of an attachment on interface `ifName` with address `ip`: the /32, a link route to
 * the gateway, a default route through it and the gateway's permanent neighbour entry (the host
 * veth's MAC). Another interface of the same pod (a meta-plugin's second network) gets the same
 * routes with a metric, so they yield to the primary interface's and never collide with them, plus
 * a table of its own and a rule that sends what leaves from its address out through it.
 */
export function podSideRouting(
  ifName: string,
  ip: string,
  hostMac: string,
  // An IPv6 pod's IPv4 egress interface (v4if0) carries the pod's only IPv4 routes: primary too.
  primary = ifName === PRIMARY_POD_IF,
): Resource[] {
  const cidr = `${ip}/32`;
  const gateway = {
    kind: 'route',
    side: 'pod',
    dst: `${POD_GATEWAY}/32`,
    dev: ifName,
    scopeLink: true,
  } as const;
  const viaGateway = { kind: 'route', side: 'pod', dst: 'default', dev: ifName, via: POD_GATEWAY } as const;
  const out: Resource[] = [{ kind: 'ifAddress', side: 'pod', dev: ifName, cidr }];
  if (primary) {
    out.push({ ...gateway, table: MAIN_TABLE }, { ...viaGateway, table: MAIN_TABLE });
  } else {
    const table = podInterfaceTable(ifName);
    out.push(
      { ...gateway, table: MAIN_TABLE, metric: table },
      { ...viaGateway, table: MAIN_TABLE, metric: table },
      { ...gateway, table },
      { ...viaGateway, table },
      { kind: 'rule', side: 'pod', priority: RULE_PRIORITY_FROM_POD, from: cidr, table },
    );
  }
  out.push({ kind: 'neighbour', side: 'pod', dev: ifName, ip: POD_GATEWAY, lladdr: hostMac });
  return out;
}

/** A pod with a secondary IP of one of the node's ENIs. */
export function planRegularPod(spec: RegularPodSpec): Resource[] {
  const { key, ip, foundVeth } = spec;
  const hostName = foundVeth?.hostName ?? hostVethName(key, spec.vethPrefix);
  const hostMac = foundVeth?.hostMac ?? hostVethMac(key);
  const podMac = foundVeth?.podMac ?? podVethMac(key);
  const ifName = key.ifName;
  const out: Resource[] = [
    { kind: 'vpcAddress', ip, eniId: spec.eniId },
    { kind: 'veth', hostName, hostMac, podIfName: ifName, podMac, mtu: spec.mtu },
    ...podSideRouting(ifName, ip, hostMac),
    // Node side: the host route to the pod, its rules, its SNAT membership.
    { kind: 'route', side: 'node', dst: `${ip}/32`, dev: hostName, table: MAIN_TABLE, scopeLink: true },
    { kind: 'rule', priority: RULE_PRIORITY_TO_POD, to: `${ip}/32`, table: MAIN_TABLE },
  ];
  if (spec.routeTable !== MAIN_TABLE) {
    out.push({ kind: 'rule', priority: RULE_PRIORITY_FROM_POD, from: `${ip}/32`, table: spec.routeTable });
  }
  if (spec.snat) out.push({ kind: 'snat', ip });
  if (spec.v6EgressIp !== undefined) {
    out.push(...v6EgressResources({ key, vethPrefix: spec.vethPrefix, ip: spec.v6EgressIp, mtu: spec.mtu }));
  }
  return out;
}
