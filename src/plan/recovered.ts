// A recovered record: what the agent found of its own on a node whose ledger was lost or refused
// (docs/design.md, Recovery). Its attachment key is unknown; the host veth name is derived from the
// key (names.ts), so a later DEL whose key hashes to that name is this record's DEL. Until the
// runtime's DEL or GC, or the reconcile pass, says the pod is gone, its address stays held.
import type { AttachmentKey, PodIdentity } from './attachment.ts';
import { type Resource, vethOf } from './resource.ts';

/** Why the ledger could not say what the node owns. */
export type RecoveryReason = 'ledgerMissing' | 'ledgerCorrupt';

export interface RecoveredRecord {
  /** The pod address held (absent: a host veth was found with no address routed to it). */
  readonly ip?: string;
  /** The ENI EC2 lists the address on (absent when EC2 did not list it). */
  readonly eniId?: string;
  /** The kernel objects found for it (host veth, host route, rules, SNAT element): what its teardown removes. */
  readonly resources: readonly Resource[];
  /** Held because the Kubernetes API showed this pod with the address (no kernel object was found). */
  readonly pod?: PodIdentity;
  /**
   * The branch binding (its key) whose holder veth this record is: a pod with its own security
   * groups, rebuilt by recovery; the binding's routes and rules point at this record's veth until a
   * sandbox of the pod takes it over, and its release lets the binding settle.
   */
  readonly binding?: string;
  readonly reason: RecoveryReason;
  /** ms since epoch */
  readonly recoveredAt: number;
}

/** The host veth a recovered record holds, if any. */
export function recoveredHostVeth(r: RecoveredRecord): string | undefined {
  return vethOf(r.resources)?.hostName;
}

/** One record per host veth, or per address when it has no veth. */
export function recoveredRecordId(r: RecoveredRecord): string {
  const veth = recoveredHostVeth(r);
  return veth !== undefined ? `veth ${veth}` : `ip ${r.ip ?? ''}`;
}

/** The network name of the holder keys of recovered records (never a CNI network's: it has a space). */
export const RECOVERED_NETWORK = 'recovered record';

/** The holder the pool records for a recovered record's address. */
export function recoveredHolderKey(r: RecoveredRecord): AttachmentKey {
  return { network: RECOVERED_NETWORK, containerId: recoveredRecordId(r), ifName: '-' };
}
