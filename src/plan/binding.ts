// A branch binding: one pod's branch ENI (pod UID + branch ENI ID) on this node, and the shared
// resources that reach it (the device on the trunk, a route table of its own, the routes and rules
// into and out of it). Every sandbox of the pod is an attachment of the binding; exactly one of
// them, the holder (the newest live sandbox), has the routes and rules pointed at its veth.
// Ownership: the binding owns the shared resources, keyed by the binding, never by a VLAN ID, so a
// late DEL of a replaced sandbox or of a deleted pod whose VLAN ID passed on cannot touch them.
import type { AttachmentKey, PodIdentity } from './attachment.ts';
import type { TrunkDriver } from './kernel-op.ts';
import type { Resource } from './resource.ts';

export interface BindingKey {
  readonly podUid: string;
  readonly eniId: string;
}

export function bindingKeyString(key: BindingKey): string {
  return `${key.podUid}/${key.eniId}`;
}

/** POD_SECURITY_GROUP_ENFORCING_MODE, the upstream's meaning. */
export type EnforcingMode = 'strict' | 'standard';

/**
 * A branch ENI as the node uses it: what the resource controller assigned a pod (its annotation),
 * held to what EC2 shows (src/agent/branch/claim.ts).
 */
export interface BranchEni {
  readonly eniId: string;
  /** Lower case. */
  readonly mac: string;
  readonly ip: string;
  /** 802.1q VLAN ID of the branch on the node's trunk. */
  readonly vlanId: number;
  readonly subnetCidr: string;
  /** The subnet's router (first address + 1). */
  readonly gateway: string;
}

/** A pod's binding to its branch ENI (the ENI's ID is in the key). */
export interface BranchBinding extends Omit<BranchEni, 'eniId'> {
  readonly key: BindingKey;
  readonly pod: PodIdentity;
  /** The trunk ENI's link on the node. */
  readonly trunkDev: string;
  /** The binding's own route table. */
  readonly table: number;
  readonly mode: EnforcingMode;
  readonly driver: TrunkDriver;
  readonly mtu: number;
  /** The attachment whose veth the routes and rules point at; none while no live sandbox has a veth. */
  readonly holder?: AttachmentKey;
  /**
   * What the binding owns in the kernel now. While the holder changes it lists the old and the new
   * holder's resources both (recorded before the kernel changes), so a crash leaves nothing unowned.
   */
  readonly resources: readonly Resource[];
  /**
   * The resource controller gave this binding's VLAN ID or address to another pod's branch ENI
   * (`by`): its shared resources were removed by that pod's ADD; its sandboxes' DELs remove only
   * their own veths.
   */
  readonly supersededBy?: string;
  /** ms since epoch */
  readonly createdAt: number;
}
