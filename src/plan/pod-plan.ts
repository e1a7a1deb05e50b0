// The pod plan: from what an ADD decided (key, address, ENI table, MTU) to the complete list of
// resources the attachment will own. ADD records this list before it touches the kernel and then
// creates exactly it; DEL, CHECK and the reconcile loop work from the recorded list alone.
import type { AttachmentKey } from './attachment.ts';
import { RULE_PRIORITY_FROM_POD, RULE_PRIORITY_TO_POD } from './kinds/rule.ts';
import { hostVethMac, hostVethName, podVethMac } from './names.ts';
import type { Resource } from './resource.ts';
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
}

/** A pod with a secondary IP of one of the node's ENIs. */
export function planRegularPod(spec: RegularPodSpec): Resource[] {
  const { key, ip } = spec;
  const hostName = hostVethName(key, spec.vethPrefix);
  const hostMac = hostVethMac(key);
  const ifName = key.ifName;
  const out: Resource[] = [
    { kind: 'vpcAddress', ip, eniId: spec.eniId },
    { kind: 'veth', hostName, hostMac, podIfName: ifName, podMac: podVethMac(key), mtu: spec.mtu },
    // Pod side, in the pod's namespace: its address, its gateway and a default route through it.
    { kind: 'ifAddress', side: 'pod', dev: ifName, cidr: `${ip}/32` },
    {
      kind: 'route',
      side: 'pod',
      dst: `${POD_GATEWAY}/32`,
      dev: ifName,
      table: MAIN_TABLE,
      scopeLink: true,
    },
    { kind: 'route', side: 'pod', dst: 'default', dev: ifName, via: POD_GATEWAY, table: MAIN_TABLE },
    { kind: 'neighbour', side: 'pod', dev: ifName, ip: POD_GATEWAY, lladdr: hostMac },
    // Node side: the host route to the pod, its rules, its SNAT membership.
    { kind: 'route', side: 'node', dst: `${ip}/32`, dev: hostName, table: MAIN_TABLE, scopeLink: true },
    { kind: 'rule', priority: RULE_PRIORITY_TO_POD, to: `${ip}/32`, table: MAIN_TABLE },
  ];
  if (spec.routeTable !== MAIN_TABLE) {
    out.push({ kind: 'rule', priority: RULE_PRIORITY_FROM_POD, from: `${ip}/32`, table: spec.routeTable });
  }
  if (spec.snat) out.push({ kind: 'snat', ip });
  return out;
}
