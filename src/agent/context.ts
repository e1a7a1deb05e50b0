// Everything the agent's CNI operations use, injected (kernel, cloud-backed pool, ledger, clock, log).

import type { Dataplane } from '../dataplane/dataplane.ts';
import type { Logger } from '../infra/log.ts';
import type { Ledger } from '../ledger/ledger.ts';
import type { AttachmentKey, PodIdentity } from '../plan/attachment.ts';
import type { EnforcingMode } from '../plan/binding.ts';
import type { TrunkDriver } from '../plan/kernel-op.ts';
import type { EventRecorder } from '../pods/kube-events.ts';
import type { PodSource } from '../pods/watch/pod-source.ts';
import type { AddressSource } from './address-source.ts';
import type { TrunkFactsSource } from './branch/trunk-facts.ts';
import type { NetnsInspection } from './cni-ops/netns-inspection.ts';
import type { EgressAddressAllocator } from './egress-addresses.ts';
import type { AgentCounters } from './stats.ts';

/** The trunk ENI's link on the node, once the agent has configured it. */
export interface TrunkLink {
  readonly dev: string;
  readonly mac: string;
  readonly eniId: string;
}

export interface NodeFacts {
  readonly vpcCidrs: readonly string[];
  readonly primaryIp: string;
}

/**
 * What DEL may use (and CNI GC, which removes each attachment as its DEL would). Rule 5, "DEL does
 * not guess": the ledger decides, so there is no pod source and no cloud here: a DEL that asked the
 * Kubernetes API what to delete would not compile. Events are a write the operator reads (a
 * prevented teardown reported on the pod), never a question.
 */
export interface DelContext {
  readonly ledger: Ledger;
  readonly dataplane: Dataplane;
  readonly addresses: Pick<AddressSource, 'release'>;
  readonly log: Logger;
  readonly vethPrefix: string;
  readonly defaultMtu: number;
  readonly counters: AgentCounters;
  /** Kubernetes Events on pods (best effort, queued); absent without an API. */
  readonly events?: EventRecorder;
}

/**
 * What CHECK may use: it compares the record with the kernel and changes nothing, so the ledger is
 * one it can only read and the dataplane one it can only look at (a CHECK that repaired or removed
 * something would not compile).
 */
export interface CheckContext {
  readonly ledger: Pick<Ledger, 'get' | 'list' | 'binding'>;
  readonly dataplane: Pick<Dataplane, 'inspect'>;
  readonly addresses: Pick<AddressSource, 'lostEni'>;
}

/** What ADD may use: everything DEL may (an ADD first applies its key's spooled DEL), and more. */
export interface AddContext extends DelContext {
  readonly addresses: AddressSource;
  readonly pods: PodSource;
  readonly node: NodeFacts;
  readonly now: () => number;
  readonly addWaitMs: number;
  /** AWS_VPC_K8S_CNI_EXTERNALSNAT: pod addresses never join the node's SNAT set. */
  readonly externalSnat: boolean;
  /** ENABLE_POD_ENI: pods the resource controller gave a branch ENI get it (security groups for pods). */
  readonly enablePodEni: boolean;
  /** The trunk, when it is attached and configured; pods with security groups wait for it. */
  readonly trunk: () => TrunkLink | undefined;
  /**
   * EC2's view of the trunk's branch ENIs, against which a pod-eni annotation is checked before
   * anything is built from it (branch/claim.ts). Without it, no annotation is trusted.
   */
  readonly trunkFacts?: TrunkFactsSource;
  readonly trunkDriver: TrunkDriver;
  /** POD_SECURITY_GROUP_ENFORCING_MODE, unless the network's config sets podSGEnforcingMode. */
  readonly enforcingMode: EnforcingMode;
  /** IPv6 mode with ENABLE_V4_EGRESS: the node-local IPv4 addresses of IPv6 pods' v4if0. */
  readonly v4Egress?: EgressAddressAllocator;
  /** IPv4 mode with ENABLE_V6_EGRESS: the node-local IPv6 addresses of IPv4 pods' v6if0. */
  readonly v6Egress?: EgressAddressAllocator;
  /**
   * ADD's look at CNI_NETNS: whether it exists, what it is when it is no network namespace, and
   * its identity (netns-inspection.ts; I/O kept out of the operations for unit tests).
   */
  readonly inspectNetns: (path: string) => Promise<NetnsInspection>;
  /**
   * netnsIdentity of namespaces that are never a pod's: the node's own (the agent's), and the one
   * of PID 1 (the same on a node; in the lab, the machine's own).
   */
  readonly notPodNetns?: ReadonlySet<string>;
}

/**
 * The agent's whole context, built once at start: ADD's, which holds DEL's and CHECK's, plus what
 * the background loops that run beside the CNI operations use.
 */
export interface OperationContext extends AddContext {
  /** device:inode of the namespace at that path, undefined if it cannot be read. */
  readonly netnsIdentity: (path: string) => Promise<string | undefined>;
}

/** A parsed ADD/DEL/CHECK, reduced to what the operations need. */
export interface AttachRequest {
  readonly key: AttachmentKey;
  readonly netns: string | undefined;
  readonly pod: PodIdentity;
  readonly mtu: number | undefined;
  readonly vethPrefix: string | undefined;
  /** The network config's podSGEnforcingMode. */
  readonly enforcingMode?: EnforcingMode;
  /** Pod addresses named by prevResult (a hint for DEL when the ledger has no record). */
  readonly prevResultIps: readonly string[];
}
