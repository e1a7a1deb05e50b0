// The branch half of the resource controller: a pod bound to a node whose instance has a trunk
// ENI gets a branch ENI (the pod's security groups; the instance's subnet, or under custom
// networking the ENIConfig's) associated with the trunk under the lowest free VLAN ID, and the
// pod-eni annotation naming it. The branch ENIs a pod owns
// are tagged with its UID; when the pod is deleted they are disassociated and deleted, which
// frees their VLAN IDs for the next pod.
import { errorText } from '../../infra/error-text.ts';
import { Ec2Error } from '../ec2/error.ts';
import type { ObjectStore } from '../kube/object-store.ts';
import { isJsonObject, type JsonObject } from '../kube/objects.ts';
import type { VpcOperations } from '../vpc/operations.ts';
import type { Eni, Instance } from '../vpc/view.ts';
import {
  BRANCH_POD_TAG,
  BRANCH_POD_UID_TAG,
  ControllerError,
  POD_ENI_ANNOTATION,
  type PodEniEntry,
} from './names.ts';

export interface PodEniRequest {
  readonly namespace: string;
  readonly name: string;
  readonly securityGroupIds: readonly string[];
}

const MAX_VLAN_ID = 4094;

/** The subnet of a node's branch ENIs: its ENIConfig's under custom networking; undefined: the instance's. */
export type BranchSubnetOf = (nodeName: string) => string | undefined;

export async function assignBranch(
  ops: VpcOperations,
  pods: ObjectStore,
  req: PodEniRequest,
  branchSubnetOf: BranchSubnetOf,
): Promise<PodEniEntry> {
  const podName = `${req.namespace}/${req.name}`;
  const pod = pods.find(req.namespace, req.name);
  if (pod === undefined) throw new ControllerError(404, `pod ${podName} not found`);
  const { uid, nodeName } = podIdentity(pod);
  const owned = ownedBranches(ops, uid);
  if (owned.length > 0) return entryOf(ops, owned[0]!);
  if (nodeName === undefined) {
    throw new ControllerError(409, `pod ${podName} is not bound to a node (spec.nodeName is empty)`);
  }
  const { instance, trunk } = trunkOfNode(ops, nodeName, podName);
  const subnetId = branchSubnetOf(nodeName) ?? instance.subnetId;
  const vlanId = lowestFreeVlan(ops, trunk.eniId);
  const branch = ops.createEni({
    subnetId,
    securityGroupIds: req.securityGroupIds,
    description: `branch ENI of pod ${podName}, by the emulated VPC resource controller`,
    interfaceType: 'branch',
    tags: new Map([
      [BRANCH_POD_UID_TAG, uid],
      [BRANCH_POD_TAG, podName],
    ]),
  });
  try {
    await ops.associateTrunk(branch.eniId, trunk.eniId, vlanId);
  } catch (err) {
    ops.deleteEni(branch.eniId);
    const reason = err instanceof Ec2Error ? `${err.code}: ${err.message}` : errorText(err);
    throw new ControllerError(409, `cannot give pod ${podName} a branch ENI on node ${nodeName}: ${reason}`);
  }
  const entry = entryOf(ops, branch);
  // Through the store, so that watches see the pod MODIFIED. A pod deleted meanwhile fails here;
  // its DELETED event then releases the branch.
  pods.patch(req.namespace, req.name, {
    metadata: { annotations: { [POD_ENI_ANNOTATION]: JSON.stringify([entry]) } },
  });
  return entry;
}

/** Disassociates and deletes every branch ENI of the pod UID; returns their IDs. */
export async function releaseBranches(ops: VpcOperations, uid: string): Promise<string[]> {
  const released: string[] = [];
  for (const branch of ownedBranches(ops, uid)) {
    if (branch.trunkAssociation !== undefined) {
      await ops.disassociateTrunk(branch.trunkAssociation.associationId);
    }
    ops.deleteEni(branch.eniId);
    released.push(branch.eniId);
  }
  return released;
}

export function podIdentity(pod: JsonObject): { uid: string; nodeName: string | undefined } {
  const meta = isJsonObject(pod.metadata) ? pod.metadata : {};
  const spec = isJsonObject(pod.spec) ? pod.spec : {};
  const uid = typeof meta.uid === 'string' ? meta.uid : '';
  const nodeName = typeof spec.nodeName === 'string' && spec.nodeName !== '' ? spec.nodeName : undefined;
  return { uid, nodeName };
}

function ownedBranches(ops: VpcOperations, uid: string): Eni[] {
  if (uid === '') return [];
  return ops.state
    .enis()
    .filter((e) => e.interfaceType === 'branch' && e.tags.get(BRANCH_POD_UID_TAG) === uid);
}

function trunkOfNode(
  ops: VpcOperations,
  nodeName: string,
  podName: string,
): { instance: Instance; trunk: Eni } {
  const instance = ops.state.instances().find((i) => i.nodeName === nodeName);
  if (instance === undefined) {
    throw new ControllerError(
      409,
      `pod ${podName} is bound to node ${nodeName}, which no instance of this VPC is`,
    );
  }
  const trunk = ops.state.enisOf(instance.instanceId).find((e) => e.interfaceType === 'trunk');
  if (trunk === undefined) {
    throw new ControllerError(
      409,
      `node ${nodeName} (${instance.instanceId}, ${instance.instanceType}) has no trunk ENI yet: its agent ` +
        'asks for one by listing SecurityGroupsForPods in its CNINode or labelling the node ' +
        'vpc.amazonaws.com/has-trunk-attached=false (ENABLE_POD_ENI=true)',
    );
  }
  return { instance, trunk };
}

/** First fit from 1: an ID freed by a deleted pod is the next one handed out. */
export function lowestFreeVlan(ops: VpcOperations, trunkEniId: string): number {
  const used = new Set(ops.state.branchesOf(trunkEniId).map((b) => b.trunkAssociation?.vlanId));
  for (let vlan = 1; vlan <= MAX_VLAN_ID; vlan++) if (!used.has(vlan)) return vlan;
  throw new ControllerError(409, `trunk ${trunkEniId} has no free VLAN ID`);
}

function entryOf(ops: VpcOperations, branch: Eni): PodEniEntry {
  return {
    eniId: branch.eniId,
    ifAddress: branch.mac,
    privateIp: branch.primaryIp,
    vlanId: branch.trunkAssociation?.vlanId ?? 0,
    subnetCidr: ops.state.subnet(branch.subnetId).spec.cidr,
  };
}
