// Everything the agent's CNI operations use, injected (kernel, cloud-backed pool, ledger, clock, log).
import type { Dataplane } from '../dataplane/dataplane.ts';
import type { Logger } from '../infra/log.ts';
import type { Ledger } from '../ledger/ledger.ts';
import type { AttachmentKey, PodIdentity } from '../plan/attachment.ts';
import type { PodSource } from '../pods/pod-source.ts';
import type { AddressSource } from './address-source.ts';

export interface NodeFacts {
  readonly vpcCidrs: readonly string[];
  readonly primaryIp: string;
}

export interface OperationContext {
  readonly ledger: Ledger;
  readonly addresses: AddressSource;
  readonly dataplane: Dataplane;
  readonly pods: PodSource;
  readonly node: NodeFacts;
  readonly log: Logger;
  readonly now: () => number;
  readonly vethPrefix: string;
  readonly defaultMtu: number;
  readonly addWaitMs: number;
  /** AWS_VPC_K8S_CNI_EXTERNALSNAT: pod addresses never join the node's SNAT set. */
  readonly externalSnat: boolean;
  /** ENABLE_POD_ENI: refuse pods annotated for a branch ENI (not built yet) instead of ignoring them. */
  readonly enablePodEni: boolean;
  /** Whether the netns path exists (I/O kept out of the operations for unit tests). */
  readonly netnsExists: (path: string) => Promise<boolean>;
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
  /** Pod addresses named by prevResult (a hint for DEL when the ledger has no record). */
  readonly prevResultIps: readonly string[];
}
