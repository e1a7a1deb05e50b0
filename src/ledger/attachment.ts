// The attachment: one pod interface attached by vpcnet, and everything it owns.
// Ownership (DESIGN.md rule 1): every resource vpcnet creates for a pod is listed in
// `resources` of exactly one attachment; an operation for attachment A removes only A's.

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

/** One kernel or cloud resource owned by an attachment. Removing it must be idempotent. */
export type OwnedResource =
  /** A secondary IP of an ENI, held by this attachment. */
  | { readonly kind: 'address'; readonly ip: string; readonly eniId: string }
  /** The host side of the pod's veth pair (deleting it deletes the pod side too). */
  | { readonly kind: 'veth'; readonly hostName: string }
  /** Host route to the pod's address through its veth. */
  | { readonly kind: 'hostRoute'; readonly dst: string; readonly dev: string }
  /** A policy rule; `from`/`to` are /32 addresses; table 254 is main. */
  | {
      readonly kind: 'rule';
      readonly priority: number;
      readonly from?: string;
      readonly to?: string;
      readonly table: number;
    }
  /** Membership of the pod's address in vpcnet's SNAT set. */
  | { readonly kind: 'snat'; readonly ip: string };

export type OwnedResourceKind = OwnedResource['kind'];

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
  /** The pod's VPC address (no prefix length; configured as /32). */
  readonly ip: string;
  readonly eniId: string;
  /** Route table of the ENI the address belongs to (254 = main, for the primary ENI). */
  readonly routeTable: number;
  readonly hostVeth: string;
  readonly mtu: number;
  /** ms since epoch */
  readonly createdAt: number;
  /**
   * 'adding' while the ADD that created it is still changing the kernel: the record is made
   * durable before the first kernel change, so that after a crash the agent knows what the
   * half-done ADD may have created (ownership) and removes it. Absent once the ADD succeeded.
   */
  readonly phase?: 'adding';
  readonly resources: readonly OwnedResource[];
}
