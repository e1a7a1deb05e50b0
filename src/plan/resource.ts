// Everything vpcnet creates for a pod attachment, as data. The ledger records exactly these
// (ownership: what an attachment's record lists is what it owns, and nothing else); ADD creates
// them, DEL removes them, CHECK and the reconcile loop judge them against the kernel's views. How
// each kind is created, removed, checked and repaired lives in ./kinds/, one file per kind.
import type { RuleSpec, Side, TrunkDeviceSpec } from './kernel-op.ts';

/** A VPC address (an ENI's secondary IP): a cloud resource that IPAM hands out and takes back. */
export interface VpcAddressResource {
  readonly kind: 'vpcAddress';
  readonly ip: string;
  readonly eniId: string;
}

/** The pod's veth pair: `podIfName` inside the pod, `hostName` on the node; both ends up. */
export interface VethResource {
  readonly kind: 'veth';
  readonly hostName: string;
  readonly hostMac: string;
  readonly podIfName: string;
  /** Absent in records made before pod MACs were derived from the key (the kernel chose it). */
  readonly podMac?: string;
  readonly mtu: number;
}

/** An address on an interface (the pod's /32, an ENI's primary /32). */
export interface IfAddressResource {
  readonly kind: 'ifAddress';
  readonly side: Side;
  readonly dev: string;
  readonly cidr: string;
}

/**
 * An IPv6 address on an interface (an IPv6 pod's /128), added without duplicate address detection:
 * the VPC assigned it to this pod alone, and DAD would hold it unusable for a second. A kind of its
 * own (not an ifAddress) also so that an agent without IPv6 refuses a ledger holding one instead of
 * misreading it (docs/design.md, IPv6 pods).
 */
export interface Ipv6AddressResource {
  readonly kind: 'ipv6Address';
  readonly side: Side;
  readonly dev: string;
  readonly cidr: string;
}

export interface RouteResource {
  readonly kind: 'route';
  readonly side: Side;
  /** "default" or a prefix; an IPv6 default route names an IPv6 `via`. */
  readonly dst: string;
  readonly dev: string;
  readonly via?: string;
  readonly table: number;
  readonly scopeLink?: boolean;
  /** The route's priority; absent: 0. A pod's second interface's routes yield to its first's. */
  readonly metric?: number;
}

/** A permanent neighbour entry (the pod's gateway, answered by the host veth's MAC). */
export interface NeighbourResource {
  readonly kind: 'neighbour';
  readonly side: Side;
  readonly dev: string;
  readonly ip: string;
  readonly lladdr: string;
}

/** A policy rule on the node, or (`side: 'pod'`) inside the pod for its second interface. */
export interface RuleResource extends RuleSpec {
  readonly kind: 'rule';
  readonly side?: 'pod';
}

/** Membership of a pod address in vpcnet's SNAT set (traffic leaving the VPC uses the node's IP). */
export interface SnatResource {
  readonly kind: 'snat';
  readonly ip: string;
}

/** The device on the trunk link that reaches one branch ENI (its VLAN, its MAC). */
export interface TrunkDeviceResource extends TrunkDeviceSpec {
  readonly kind: 'trunkDevice';
}

/** A link's configuration vpcnet sets but never undoes (an ENI's link: up, with vpcnet's MTU). */
export interface LinkConfigResource {
  readonly kind: 'linkConfig';
  readonly dev: string;
  readonly mtu: number;
}

export type Resource =
  | VpcAddressResource
  | VethResource
  | IfAddressResource
  | Ipv6AddressResource
  | RouteResource
  | NeighbourResource
  | RuleResource
  | SnatResource
  | LinkConfigResource
  | TrunkDeviceResource;

export type ResourceKind = Resource['kind'];

export type ResourceOf<K extends ResourceKind> = Extract<Resource, { kind: K }>;

/** The VPC address a resource list holds, if any. */
export function vpcAddressOf(resources: readonly Resource[]): VpcAddressResource | undefined {
  return resources.find((r): r is VpcAddressResource => r.kind === 'vpcAddress');
}

/** The veth a resource list holds, if any. */
export function vethOf(resources: readonly Resource[]): VethResource | undefined {
  return resources.find((r): r is VethResource => r.kind === 'veth');
}
