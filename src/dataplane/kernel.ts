// A kernel as the dataplane drives it: it runs primitive operations (../plan/kernel-op.ts) in the
// node's or a pod's namespace and reads namespaces back as views (../plan/views.ts). Three drivers
// implement it: netlink/ (rtnetlink through a resident helper; the agent's), ip-cli/ (the ip and nft commands)
// and testing/ (an in-memory model). Everything above it (what to create, in which order, how to
// undo, what counts as drift) is shared, so the fake can only differ from the real drivers in how
// it applies one operation.
import type { KernelOp } from '../plan/kernel-op.ts';
import type { NodeView, PodView } from '../plan/views.ts';

export type Namespace = { readonly side: 'node' } | { readonly side: 'pod'; readonly path: string };

export const NODE: Namespace = { side: 'node' };

/**
 * What of a pod's namespace a read covers (pod-scope.ts): these links with their addresses and
 * neighbours, the routes of a table through one of them, the rules at these priorities. A pod with
 * NET_ADMIN fills the rest of its namespace at will; vpcnet judges none of it.
 */
export interface PodScope {
  readonly links: readonly string[];
  readonly routes: readonly { readonly table: number; readonly dev: string }[];
  readonly rulePriorities: readonly number[];
}

/** The SNAT of pods' node-local egress range of one family (ip-cli/egress-snat.ts). */
export interface EgressSnatConfig {
  /** The node's address of the family (its primary IPv4; its IPv6): what the range's traffic leaves with. */
  readonly snatSource: string;
  /** AWS_VPC_K8S_CNI_RANDOMIZESNAT (default `prng`). */
  readonly randomizeSnat?: RandomizeSnat;
}

/** IPv6 pods' IPv4 egress (ENABLE_V4_EGRESS). */
export type V4EgressConfig = EgressSnatConfig;

/** Operations for one namespace. */
export interface KernelRun {
  readonly ns: Namespace;
  readonly ops: readonly KernelOp[];
}

export interface RunFailure {
  /** Index of the failed operation in the list given to run(). */
  readonly index: number;
  /** What the kernel (or tool) said, e.g. "RTNETLINK answers: File exists". */
  readonly message: string;
}

/** `entered: false`: the namespace could not be entered, nothing ran. */
export type RunResult =
  | { readonly entered: true; readonly failures: readonly RunFailure[] }
  | { readonly entered: false; readonly reason: string };

export interface NodeNetworkConfig {
  /** CIDRs of the VPC: traffic to these is not SNATed. */
  readonly vpcCidrs: readonly string[];
  /** Node primary IP: source for SNAT of pod traffic leaving the VPC. */
  readonly snatSource: string;
  /** AWS_VPC_K8S_CNI_EXCLUDE_SNAT_CIDRS: further destinations reached without SNAT (default none). */
  readonly excludeCidrs?: readonly string[];
  /** AWS_VPC_K8S_CNI_RANDOMIZESNAT: how the SNAT rule picks source ports (default `prng`). */
  readonly randomizeSnat?: RandomizeSnat;
}

/** Upstream's values: `prng` = fully random ports, `hashrandom` = hash-based random, `none`. */
export type RandomizeSnat = 'prng' | 'hashrandom' | 'none';

/** NodePort support (ip-cli/node-port.ts): the conntrack mark and the rule that reads it. */
export interface NodePortConfig {
  /** AWS_VPC_CNI_NODE_PORT_SUPPORT; false removes the chain and the rule. */
  readonly enabled: boolean;
  /** AWS_VPC_K8S_CNI_CONNMARK: the bits set in conntrack and restored on the packet (non-zero). */
  readonly mark: number;
  /** The primary ENI's link in the node's namespace. */
  readonly primaryLink: string;
  /** Prefixes of the host ends of pod links (veths; trunk devices of branch pods). */
  readonly podLinkPrefixes: readonly string[];
}

export interface AwsNodeFirewallRemoval {
  /** What was removed, one line each ("iptables-nft nat: -D POSTROUTING ...", "nft table ip aws-cni"). */
  readonly removed: readonly string[];
  /** What could not be read or removed, with why (a tool set missing where its tables exist, too). */
  readonly problems: readonly string[];
}

export interface Kernel {
  /**
   * Runs `ops` in order in one namespace. 'stop': the first failure ends the run (the ops before
   * it are done, none after it). 'all': every op runs and each failure is reported (removals).
   */
  run(ns: Namespace, ops: readonly KernelOp[], mode: 'stop' | 'all'): Promise<RunResult>;
  /**
   * Optional: `runs` in 'stop' mode one after another, as run() would carry them out in turn (the
   * first that is not entered or has a failure ends it), in one exchange with the driver. The
   * outcomes of the runs that ran, in order.
   */
  runInTurn?(runs: readonly KernelRun[]): Promise<RunResult[]>;
  /** The node's namespace at once (links with addresses, routes, rules, the SNAT set). */
  readNode(): Promise<NodeView>;
  /**
   * A pod's namespace at once (links with addresses, routes, neighbours), or why it cannot be
   * entered. With `scope`, at least what it names (a driver may return more). The netlink driver
   * refuses a namespace holding more of a kind than it reads (PodNamespaceTooLarge).
   */
  readPod(path: string, scope?: PodScope): Promise<PodView>;
  /** Idempotent: vpcnet's nftables table, chain and SNAT set exist with the given VPC CIDRs. */
  setupSnat(cfg: NodeNetworkConfig): Promise<void>;
  /** Idempotent: the NodePort chain in vpcnet's table and its policy rule, or neither when disabled. */
  setupNodePort(cfg: NodePortConfig): Promise<void>;
  /**
   * Idempotent: the SNAT of IPv6 pods' IPv4 egress range exists with `cfg` (ip-cli/egress-snat.ts),
   * or (undefined) does not exist.
   */
  setupV4Egress(cfg: V4EgressConfig | undefined): Promise<void>;
  /** The same for IPv4 pods' IPv6 egress range (ENABLE_V6_EGRESS, table `ip6 vpcnet_v6egress`). */
  setupV6Egress(cfg: EgressSnatConfig | undefined): Promise<void>;
  /** A sysctl of the node's namespace ("net.ipv6.conf.all.forwarding"), as its /proc/sys file reads. */
  readNodeSysctl(name: string): Promise<string>;
  /**
   * Removes what aws-node left in the node's firewall (ip-cli/aws-node-firewall.ts): its iptables
   * chains and rules, by either backend, and its `ip aws-cni` nftables table. Never throws: what
   * could not be removed is in `problems`.
   */
  removeAwsNodeFirewall(): Promise<AwsNodeFirewallRemoval>;
}
