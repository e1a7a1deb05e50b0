// The trunk half of the resource controller: a node that wants a trunk ENI (node-features.ts) gets
// one attached at the lowest free device index, through the same VpcOperations as EC2 calls so
// that the fabric makes its link: in the instance's subnet with its security groups, or under
// custom networking in the ENIConfig's subnet with the ENIConfig's security groups (the
// instance's when it lists none), as the real controller places it.
import type { VpcOperations } from '../vpc/operations.ts';
import type { Instance } from '../vpc/view.ts';
import type { CustomNetworking } from './node-features.ts';

export type TrunkOutcome =
  | { readonly kind: 'attached'; readonly eniId: string; readonly deviceIndex: number }
  | { readonly kind: 'present'; readonly eniId: string }
  | { readonly kind: 'refused'; readonly reason: string };

export function trunkDescription(instance: Instance): string {
  return `trunk ENI of ${instance.instanceId} (node ${instance.nodeName ?? '-'}), attached by the emulated VPC resource controller`;
}

/**
 * Idempotent: an instance that has a trunk keeps it (where it is: the real controller only warns
 * when it finds one outside the ENIConfig's subnet). Throws when EC2 refuses.
 */
export async function ensureTrunk(
  ops: VpcOperations,
  nodeName: string,
  custom: CustomNetworking | undefined,
): Promise<TrunkOutcome> {
  const state = ops.state;
  const instance = state.instances().find((i) => i.nodeName === nodeName);
  if (instance === undefined) return { kind: 'refused', reason: `no instance has node name ${nodeName}` };
  const enis = state.enisOf(instance.instanceId);
  const present = enis.find((e) => e.interfaceType === 'trunk');
  if (present !== undefined) return { kind: 'present', eniId: present.eniId };
  if (instance.limits.maxBranchEnis === 0) {
    return {
      kind: 'refused',
      reason: `instance type ${instance.instanceType} of ${instance.instanceId} does not support trunk ENIs`,
    };
  }
  // An agent may attach an ENI of its own meanwhile and take the index: look again, a few times.
  for (let attempt = 1; ; attempt++) {
    const deviceIndex = lowestFreeDeviceIndex(ops, instance);
    if (deviceIndex === undefined) {
      return {
        kind: 'refused',
        reason: `${instance.instanceId} (${instance.instanceType}) has no free device index for a trunk ENI (all ${instance.limits.maxEnis} in use)`,
      };
    }
    const groups = custom?.securityGroupIds ?? [];
    const trunk = ops.createEni({
      subnetId: custom?.subnetId ?? instance.subnetId,
      securityGroupIds: groups.length > 0 ? groups : instance.securityGroupIds,
      description: trunkDescription(instance),
      interfaceType: 'trunk',
    });
    try {
      await ops.attach(trunk.eniId, instance.instanceId, deviceIndex);
      return { kind: 'attached', eniId: trunk.eniId, deviceIndex };
    } catch (err) {
      ops.deleteEni(trunk.eniId);
      if (attempt >= ATTACH_ATTEMPTS) throw err;
    }
  }
}

const ATTACH_ATTEMPTS = 3;

function lowestFreeDeviceIndex(ops: VpcOperations, instance: Instance): number | undefined {
  const used = new Set(ops.state.enisOf(instance.instanceId).map((e) => e.attachment?.deviceIndex));
  for (let index = 1; index < instance.limits.maxEnis; index++) if (!used.has(index)) return index;
  return undefined;
}
