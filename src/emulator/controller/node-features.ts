// What the resource controller reads about a node before it gives it ENIs, as the real one reads
// it: whether the node wants a trunk ENI (its label `vpc.amazonaws.com/has-trunk-attached`, of
// any value, or its CNINode listing the feature `SecurityGroupsForPods`), and whether the node uses
// custom networking (its label `vpc.amazonaws.com/eniConfig`, else its CNINode's feature
// `CustomNetworking`, each naming an ENIConfig): then the trunk and the branch ENIs go into that
// ENIConfig's subnet, the trunk with the ENIConfig's security groups (the instance's when it lists
// none); else both go into the instance's subnet.
import type { ObjectStore } from '../kube/object-store.ts';
import { isJsonObject, type JsonObject } from '../kube/objects.ts';
import {
  CNI_NODE_CUSTOM_NETWORKING,
  CNI_NODE_SECURITY_GROUPS_FOR_PODS,
  ControllerError,
  ENI_CONFIG_NODE_LABEL,
  HAS_TRUNK_ATTACHED_LABEL,
} from './names.ts';

export interface NodeStores {
  readonly nodes: ObjectStore;
  readonly cniNodes: ObjectStore;
  readonly eniConfigs: ObjectStore;
}

/** Where a node's trunk and branch ENIs go under custom networking. */
export interface CustomNetworking {
  readonly eniConfig: string;
  /** How the node named it, for messages. */
  readonly namedBy: string;
  readonly subnetId: string;
  /** Empty: the instance's own security groups. */
  readonly securityGroupIds: readonly string[];
}

interface Feature {
  readonly name: string;
  readonly value: string;
}

function stringField(obj: JsonObject, key: string): string | undefined {
  const v = obj[key];
  return typeof v === 'string' ? v : undefined;
}

function labelsOf(obj: JsonObject | undefined): JsonObject {
  const meta = obj !== undefined && isJsonObject(obj.metadata) ? obj.metadata : {};
  return isJsonObject(meta.labels) ? meta.labels : {};
}

/** The features a CNINode lists; entries without a name are not features. */
function featuresOf(cniNode: JsonObject | undefined): Feature[] {
  const spec = cniNode !== undefined && isJsonObject(cniNode.spec) ? cniNode.spec : {};
  const list = Array.isArray(spec.features) ? spec.features : [];
  return list.flatMap((f) => {
    if (!isJsonObject(f)) return [];
    const name = stringField(f, 'name');
    return name === undefined ? [] : [{ name, value: stringField(f, 'value') ?? '' }];
  });
}

/** Whether the controller manages the node's trunk: the trunk label is there, or the feature is listed. */
export function wantsTrunk(stores: NodeStores, nodeName: string): boolean {
  const node = stores.nodes.find(undefined, nodeName);
  if (node === undefined) return false;
  if (labelsOf(node)[HAS_TRUNK_ATTACHED_LABEL] !== undefined) return true;
  return featuresOf(stores.cniNodes.find(undefined, nodeName)).some(
    (f) => f.name === CNI_NODE_SECURITY_GROUPS_FOR_PODS,
  );
}

/**
 * The node's custom networking, or undefined when it uses none. A named ENIConfig that does not
 * exist, or has no subnet, is a ControllerError: the real controller then gives the node nothing.
 */
export function customNetworkingOf(stores: NodeStores, nodeName: string): CustomNetworking | undefined {
  const node = stores.nodes.find(undefined, nodeName);
  const labelled = labelsOf(node)[ENI_CONFIG_NODE_LABEL];
  let eniConfig: string;
  let namedBy: string;
  if (typeof labelled === 'string') {
    eniConfig = labelled;
    namedBy = `node label ${ENI_CONFIG_NODE_LABEL}`;
  } else {
    const listed = featuresOf(stores.cniNodes.find(undefined, nodeName)).find(
      (f) => f.name === CNI_NODE_CUSTOM_NETWORKING,
    );
    if (listed === undefined) return undefined;
    if (listed.value === '') {
      throw new ControllerError(
        409,
        `node ${nodeName}: its CNINode lists ${CNI_NODE_CUSTOM_NETWORKING} without an ENIConfig name`,
      );
    }
    eniConfig = listed.value;
    namedBy = `CNINode feature ${CNI_NODE_CUSTOM_NETWORKING}`;
  }
  const object = stores.eniConfigs.find(undefined, eniConfig);
  const spec = object !== undefined && isJsonObject(object.spec) ? object.spec : undefined;
  const subnetId = spec === undefined ? undefined : stringField(spec, 'subnet');
  if (spec === undefined || subnetId === undefined || subnetId === '') {
    const why = object === undefined ? 'does not exist' : 'has no spec.subnet';
    throw new ControllerError(
      409,
      `node ${nodeName} uses custom networking with ENIConfig ${eniConfig} (${namedBy}), which ${why}`,
    );
  }
  const groups = Array.isArray(spec.securityGroups)
    ? spec.securityGroups.filter((g): g is string => typeof g === 'string')
    : [];
  return { eniConfig, namedBy, subnetId, securityGroupIds: groups };
}
