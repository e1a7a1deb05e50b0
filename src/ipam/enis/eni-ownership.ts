// Which of the instance's ENIs are vpcnet's to use, and which it created (and so may delete).
// Rules of ipam, decided from what EC2 says about the ENI, not hooks a caller may forget to wire.

import type { EniInfo, InstanceMetadata } from '../../cloud/cloud.ts';
import { CLUSTER_NAME_TAG, CREATED_AT_TAG, createdAtTagValue, type EniTagOptions } from './eni-tags.ts';

/** Every ENI vpcnet creates has a description starting with this (ENIs from before the tags carry only it). */
export const VPCNET_ENI_DESCRIPTION_PREFIX = 'vpcnet:';

/** The upstream's tag naming the instance an ENI was created for: what leak collection keys on. */
export const INSTANCE_ID_TAG = 'node.k8s.amazonaws.com/instance_id';
/** vpcnet's own mark on the ENIs it creates. */
export const CREATED_BY_TAG = 'vpcnet.io/created-by';
export const CREATED_BY_VPCNET = 'vpcnet';
/** The upstream's opt-out: an ENI tagged with it (value "true") is left alone. */
export const NO_MANAGE_TAG = 'node.k8s.amazonaws.com/no_manage';

/** Interface types that never lend secondary IPs to pods (efa-only ones have no IP address at all). */
const UNMANAGED_INTERFACE_TYPES: ReadonlySet<string> = new Set(['trunk', 'efa', 'efa-only']);

/** Keys vpcnet sets on the ENIs it creates (ADDITIONAL_ENI_TAGS may not replace them). */
export const VPCNET_OWN_TAG_KEYS: readonly string[] = [
  INSTANCE_ID_TAG,
  CREATED_BY_TAG,
  CREATED_AT_TAG,
  CLUSTER_NAME_TAG,
];

/**
 * The tags vpcnet puts on an ENI it creates for `metadata`'s instance at `createdAtMs`: the
 * operator's additional tags, then its own (the instance and creation time are what the
 * leaked-ENI sweep keys on, so they are set at creation, never later).
 */
export function vpcnetEniTags(
  metadata: InstanceMetadata,
  createdAtMs: number,
  options: EniTagOptions = {},
): Record<string, string> {
  return {
    ...options.additionalTags,
    [INSTANCE_ID_TAG]: metadata.instanceId,
    [CREATED_BY_TAG]: CREATED_BY_VPCNET,
    [CREATED_AT_TAG]: createdAtTagValue(createdAtMs),
    ...(options.clusterName === undefined ? {} : { [CLUSTER_NAME_TAG]: options.clusterName }),
  };
}

/** The description vpcnet gives an ENI it creates. */
export function vpcnetEniDescription(metadata: InstanceMetadata): string {
  return `${VPCNET_ENI_DESCRIPTION_PREFIX} node ${metadata.instanceId}`;
}

/** Ownership: vpcnet detaches and deletes only ENIs it created, never the primary ENI. */
export function createdByVpcnet(eni: EniInfo): boolean {
  if (eni.deviceNumber === 0) return false;
  return carriesVpcnetMark(eni);
}

/** vpcnet's mark on an ENI, attached or not: its created-by tag or its description. */
export function carriesVpcnetMark(eni: Pick<EniInfo, 'tags' | 'description'>): boolean {
  return (
    eni.tags[CREATED_BY_TAG] === CREATED_BY_VPCNET ||
    (eni.description ?? '').startsWith(VPCNET_ENI_DESCRIPTION_PREFIX)
  );
}

/**
 * Whether an ENI may be this cluster's: untagged (a cluster without CLUSTER_NAME tags nothing), or
 * tagged with this cluster's name. An ENI tagged for a cluster is never taken by a cluster without
 * a name, which cannot tell it is not that one.
 */
export function ofThisCluster(
  tags: Readonly<Record<string, string>>,
  clusterName: string | undefined,
): boolean {
  const tagged = tags[CLUSTER_NAME_TAG];
  return tagged === undefined || tagged === clusterName;
}

/** MANAGE_UNTAGGED_ENI and the instance whose tag marks an ENI as this node's. */
export interface UntaggedEniRule {
  readonly manageUntagged: boolean;
  readonly instanceId: string;
}

/**
 * Why vpcnet must leave this ENI's addresses alone, or undefined if it may use them, in upstream's
 * order: a trunk (pods with security groups reach their branch ENIs through it) or an EFA; then
 * the primary ENI is always used; then the no_manage tag decides when present (only `true` opts
 * out); then an ENI tagged for this instance (upstream's and vpcnet's own) is used; then, with
 * MANAGE_UNTAGGED_ENI=false, any other is left alone. Such an ENI still occupies a device slot.
 */
export function unmanagedReason(eni: EniInfo, untagged?: UntaggedEniRule): string | undefined {
  if (UNMANAGED_INTERFACE_TYPES.has(eni.interfaceType)) return `interface type ${eni.interfaceType}`;
  if (eni.deviceNumber === 0) return undefined;
  const noManage = eni.tags[NO_MANAGE_TAG];
  if (noManage !== undefined) return noManage === 'true' ? `tagged ${NO_MANAGE_TAG}=true` : undefined;
  if (untagged === undefined || untagged.manageUntagged) return undefined;
  if (eni.tags[INSTANCE_ID_TAG] === untagged.instanceId || carriesVpcnetMark(eni)) return undefined;
  return `not tagged ${INSTANCE_ID_TAG}=${untagged.instanceId} (MANAGE_UNTAGGED_ENI=false)`;
}
