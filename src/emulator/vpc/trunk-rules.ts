// What AssociateTrunkInterface checks before a branch ENI gets a VLAN on a trunk ENI.
import { Ec2Error, invalidParameter } from '../ec2/error.ts';
import type { Eni, VpcView } from './view.ts';

/** Throws the Ec2Error EC2 would answer with; returns when the association may be made. */
export function checkTrunkAssociation(view: VpcView, branch: Eni, trunk: Eni, vlanId: number): void {
  if (trunk.interfaceType !== 'trunk') {
    throw invalidParameter(`Network interface '${trunk.eniId}' is not a trunk interface.`);
  }
  if (branch === trunk || branch.interfaceType === 'trunk') {
    throw invalidParameter(`Network interface '${branch.eniId}' cannot be a branch interface.`);
  }
  if (branch.attachment !== undefined || branch.trunkAssociation !== undefined) {
    throw invalidParameter(`Network interface '${branch.eniId}' is currently in use.`);
  }
  if (!Number.isInteger(vlanId) || vlanId < 1 || vlanId > 4094) {
    throw invalidParameter(`Invalid value '${vlanId}' for VlanId; it must be within 1..4094.`);
  }
  if (view.branchesOf(trunk.eniId).some((b) => b.trunkAssociation?.vlanId === vlanId)) {
    throw invalidParameter(`VLAN ${vlanId} is already in use on trunk '${trunk.eniId}'.`);
  }
  checkBranchLimit(view, trunk);
  const branchAz = view.subnet(branch.subnetId).spec.availabilityZone;
  const trunkAz = view.subnet(trunk.subnetId).spec.availabilityZone;
  if (branchAz !== trunkAz) {
    throw invalidParameter(
      `Branch '${branch.eniId}' is in ${branchAz}; trunk '${trunk.eniId}' is in ${trunkAz}.`,
    );
  }
}

/**
 * A trunk takes as many branches as its instance's type allows. The real resource controller
 * checks its own table before it calls EC2; the emulator refuses at the API as well, so that a
 * caller that does not check learns it.
 */
function checkBranchLimit(view: VpcView, trunk: Eni): void {
  if (trunk.attachment === undefined) {
    throw new Ec2Error('IncorrectState', `Trunk interface '${trunk.eniId}' is not attached to an instance.`);
  }
  const instance = view.instance(trunk.attachment.instanceId);
  const count = view.branchesOf(trunk.eniId).length;
  if (count >= instance.limits.maxBranchEnis) {
    throw new Ec2Error(
      'BranchInterfaceLimitExceeded',
      `Trunk interface '${trunk.eniId}' of ${instance.instanceId} already has ${count} branch interfaces, ` +
        `the limit of instance type ${instance.instanceType}.`,
    );
  }
}
