// The attachment: one pod interface attached by vpcnet, and everything it owns.
// Ownership (docs/design.md, rule 1): every resource vpcnet creates for a pod is listed in `resources`
// of exactly one attachment; an operation for attachment A removes only A's.
import { type Resource, vethOf, vpcAddressOf } from './resource.ts';

/** Identifies one attachment: (network name, container ID, ifName), as in CNI. */
export interface AttachmentKey {
  readonly network: string;
  readonly containerId: string;
  readonly ifName: string;
}

export function attachmentKeyString(key: AttachmentKey): string {
  return `${key.network}/${key.containerId}/${key.ifName}`;
}

export function sameAttachmentKey(a: AttachmentKey, b: AttachmentKey): boolean {
  return a.network === b.network && a.containerId === b.containerId && a.ifName === b.ifName;
}

/** What the runtime told us about the pod (CNI_ARGS K8S_POD_*); all optional outside Kubernetes. */
export interface PodIdentity {
  readonly namespace?: string;
  readonly name?: string;
  readonly uid?: string;
}

export interface Attachment {
  readonly key: AttachmentKey;
  readonly pod: PodIdentity;
  /** CNI_NETNS at ADD time (may be gone by DEL). */
  readonly netns: string;
  /**
   * Identity of that namespace at ADD time (device:inode of the netns file). A path can be
   * reused by a new sandbox after the old namespace went away without a DEL; the reconcile loop
   * rebuilds a pod network only into the namespace it was made for (ownership).
   */
  readonly netnsId?: string;
  /** ms since epoch */
  readonly createdAt: number;
  /**
   * 'adding' while the ADD that created it is still changing the kernel: the record is made
   * durable before the first kernel change, so that after a crash the agent knows what the
   * half-done ADD may have created (ownership) and removes it. Absent once the ADD succeeded.
   */
  readonly phase?: 'adding';
  /** The pod plan: every resource this attachment owns, in the order it is built. */
  readonly resources: readonly Resource[];
  /** A sandbox of a pod with its own security groups: the branch binding it belongs to (its key string). */
  readonly branch?: string;
  /**
   * A pod another CNI (aws-node) wired before vpcnet ran on the node, recorded in place
   * (src/agent/adoption): `at` is when vpcnet adopted it (ms since epoch). Its resources are what
   * was found, so its DEL and CHECK work as for any attachment.
   */
  readonly adopted?: AdoptedFrom;
}

export interface AdoptedFrom {
  readonly from: 'aws-node';
  /** ms since epoch */
  readonly at: number;
}

/** The attachment's VPC address (every regular attachment holds exactly one). */
export function attachmentIp(att: Attachment): string | undefined {
  return vpcAddressOf(att.resources)?.ip;
}

/** The attachment's host veth name ('' if its plan has none). */
export function attachmentHostVeth(att: Attachment): string {
  return vethOf(att.resources)?.hostName ?? '';
}
