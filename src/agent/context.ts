// Everything the agent's CNI operations use, injected (kernel, cloud-backed pool, ledger, clock, log).
import type { Dataplane } from '../dataplane/dataplane.ts';
import type { AttachmentKey, PodIdentity } from '../ledger/attachment.ts';
import type { Ledger } from '../ledger/ledger.ts';
import type { PodSource } from '../pods/pod-source.ts';
import type { AddressSource } from './address-source.ts';
import type { Logger } from './log.ts';

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

/** One pod, one line: the key the agent serializes on (pod UID, else namespace/name, else container). */
export function podLineKey(pod: PodIdentity, key: AttachmentKey): string {
  if (pod.uid) return `uid:${pod.uid}`;
  if (pod.namespace && pod.name) return `pod:${pod.namespace}/${pod.name}`;
  return `container:${key.containerId}`;
}
