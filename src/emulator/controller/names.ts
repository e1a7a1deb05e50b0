// The Kubernetes names the VPC resource controller and the node agent agree on.

/**
 * Node label: the agent sets `false` to ask for a trunk ENI, `true` once it configured it. The
 * controller manages the trunk of a node that carries it, whatever its value.
 */
export const HAS_TRUNK_ATTACHED_LABEL = 'vpc.amazonaws.com/has-trunk-attached';
/** Node label naming the node's ENIConfig, for the controller (custom networking). */
export const ENI_CONFIG_NODE_LABEL = 'vpc.amazonaws.com/eniConfig';
/** CNINode features (`spec.features[].name`) a node's CNI lists for the controller. */
export const CNI_NODE_SECURITY_GROUPS_FOR_PODS = 'SecurityGroupsForPods';
export const CNI_NODE_CUSTOM_NETWORKING = 'CustomNetworking';
/** Pod annotation: JSON array of the branch ENIs the controller gave the pod. */
export const POD_ENI_ANNOTATION = 'vpc.amazonaws.com/pod-eni';
/** Extended resource the security-groups-for-pods webhook adds to a pod's first container. */
export const POD_ENI_RESOURCE = 'vpc.amazonaws.com/pod-eni';

/** Tags on a branch ENI naming the pod that owns it (the emulator's own bookkeeping). */
export const BRANCH_POD_UID_TAG = 'vpcnet-emulator/pod-uid';
export const BRANCH_POD_TAG = 'vpcnet-emulator/pod';

/** One entry of the pod-eni annotation. */
export interface PodEniEntry {
  readonly eniId: string;
  /** The branch ENI's MAC. */
  readonly ifAddress: string;
  readonly privateIp: string;
  readonly vlanId: number;
  readonly subnetCidr: string;
}

/** A request the controller refuses, with the HTTP status the admin API answers it with. */
export class ControllerError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'ControllerError';
  }
}
