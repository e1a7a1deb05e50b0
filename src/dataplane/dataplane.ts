// The node's kernel as the agent sees it. linux.ts is the real driver (ip -batch, nft);
// unit tests use a fake. All operations run in the network namespace the agent itself runs in
// (the node's), except what the spec says happens inside the pod's namespace.
import type { OwnedResource } from '../ledger/attachment.ts';
import type { IpLink, IpRoute, IpRule } from './ip-json.ts';

/** Rule priorities, as the upstream uses them (so operators recognise `ip rule` output). */
export const RULE_PRIORITY_TO_POD = 512;
export const RULE_PRIORITY_FROM_POD = 1536;
export const MAIN_TABLE = 254;
/** The pod's default gateway: link-local, answered by a permanent neighbour entry. */
export const POD_GATEWAY = '169.254.1.1';

export interface NodeNetworkConfig {
  /** CIDRs of the VPC: traffic to these is not SNATed. */
  readonly vpcCidrs: readonly string[];
  /** Node primary IP: source for SNAT of pod traffic leaving the VPC. */
  readonly snatSource: string;
}

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

export interface PodNetworkSpec {
  /** Path of the pod's network namespace (CNI_NETNS). */
  readonly netnsPath: string;
  /** Interface name inside the pod (CNI_IFNAME). */
  readonly ifName: string;
  /** Host-side veth name, derived from the attachment key (<= 15 chars). */
  readonly hostVeth: string;
  /** MAC of the host veth; the pod's gateway neighbour entry points at it. */
  readonly hostMac: string;
  readonly ip: string;
  readonly mtu: number;
  /** Route table of the address's ENI; MAIN_TABLE for the primary ENI (no from-rule then). */
  readonly routeTable: number;
  /** Add the address to the SNAT set (pod traffic leaving the VPC is SNATed to the node IP). */
  readonly snat: boolean;
}

export interface PodInterfaceState {
  /** MAC of the interface inside the pod. */
  readonly mac: string;
}

export interface AddPodResult {
  readonly resources: OwnedResource[];
  readonly podInterface: PodInterfaceState;
}

/** A piece of the pod side that can be missing or wrong. */
export type PodSidePiece =
  | 'interface'
  | 'interfaceUp'
  | 'address'
  | 'gatewayRoute'
  | 'defaultRoute'
  | 'neighbour';
/** A piece of the node side that can be missing or wrong. */
export type HostSidePiece = 'veth' | 'vethUp' | 'hostRoute' | 'ruleTo' | 'ruleFrom' | 'snat';

/** One piece of drift: which piece (for repair) and the problem as an operator reads it. */
export interface Drift<P extends string> {
  readonly piece: P;
  readonly problem: string;
}

/**
 * The node side as one reconcile pass reads it, at once (one `ip -j -batch`, one `nft -j`), in the
 * kernel's own vocabulary (the `ip -j` views of ip-json.ts), so drift is judged by the same pure
 * functions for every driver (inspect.ts).
 */
export interface NodeObservation {
  /** Every veth on the node (whatever its prefix: a network's config may set its own). */
  readonly veths: readonly IpLink[];
  /** Main-table routes. */
  readonly routes: readonly IpRoute[];
  /** Every policy rule. */
  readonly rules: readonly IpRule[];
  /** Elements of the SNAT set; undefined if the set does not exist. */
  readonly snatElements: readonly string[] | undefined;
}

/** The pod side of one attachment: drift, or why the pod's namespace could not be entered. */
export type PodSideObservation =
  | { readonly reachable: true; readonly drift: readonly Drift<PodSidePiece>[] }
  | { readonly reachable: false; readonly reason: string };

export interface Dataplane {
  /** Idempotent: vpcnet's nftables table, chain and SNAT set exist with the given VPC CIDRs. */
  setupNode(cfg: NodeNetworkConfig): Promise<void>;
  /** Idempotent: the ENI's link (found by MAC) is up, has its address and its route table. Returns link name. */
  setupEni(spec: EniLinkSpec): Promise<string>;
  /**
   * Idempotent undo of setupEni before the ENI is detached: flushes the ENI's route table, deletes
   * its primary-IP rule and /32 address. Touches no other table or rule; what is gone counts as
   * removed. Refuses the main table (the primary ENI is never torn down).
   */
  teardownEni(spec: EniLinkSpec): Promise<void>;
  /**
   * Creates the pod's network: veth (peer created directly in the pod namespace as ifName),
   * /32 address, default route via POD_GATEWAY with a permanent neighbour, host route,
   * rules, SNAT membership. Each step is undone if a later one fails.
   * Returns the resources created (to be recorded in the ledger).
   */
  addPod(spec: PodNetworkSpec): Promise<AddPodResult>;
  /** Removes exactly these resources; what is already gone counts as removed. */
  removeResources(resources: readonly OwnedResource[]): Promise<void>;
  /** Reads back the state; returns human-readable problems (empty = healthy). */
  inspectPod(spec: PodNetworkSpec): Promise<string[]>;
  /** Names of links on the node whose name starts with the prefix (for GC of orphaned host veths). */
  listHostVeths(prefix: string): Promise<string[]>;
  /** Reads the node side at once (for the reconcile loop: drift of every attachment, and GC). */
  observeNode(): Promise<NodeObservation>;
  /** Reads the pod side of one attachment (one process inside the pod's namespace). */
  observePodSide(spec: PodNetworkSpec): Promise<PodSideObservation>;
  /**
   * Reads the node side of this pod and restores what is missing: host veth up, host route,
   * to-rule, from-rule, SNAT element (one `ip -batch`, one `nft` at most). Returns the problems it
   * fixed (inspectPod's wording). Fails if the host veth is gone: that needs addPod.
   */
  repairHostSide(spec: PodNetworkSpec): Promise<string[]>;
  /**
   * Reads the pod side and restores what is missing inside the pod's namespace: interface up,
   * address, gateway and default routes, the permanent neighbour (one `ip -batch` there). Returns
   * the problems it fixed. Fails if the pod interface is gone: that needs addPod.
   */
  repairPodSide(spec: PodNetworkSpec): Promise<string[]>;
}
