// Pod metadata from the Kubernetes API, used on ADD only (docs/design.md, Components): the pod's UID and
// annotations. A pod the API does not know, or no API at all (cnitool, podman), means regular
// networking; only branch-ENI networking needs the pod's annotation. DEL never asks the API.
import type { PodMetadata } from '../pod-metadata.ts';

export type { PodMetadata } from '../pod-metadata.ts';
export { PodLookupError, parsePod } from '../pod-metadata.ts';

export interface PodSource {
  /**
   * undefined when the API does not know the pod (or there is no API). `uid`, when the runtime
   * passed it, tells a cache that an entry for another pod of that name is not this one. Throws
   * only on transport errors.
   */
  lookup(namespace: string, name: string, uid?: string): Promise<PodMetadata | undefined>;
  /**
   * Like lookup, but always asks the API itself, never a cache: for a decision that takes something
   * from another pod (its branch ENI's VLAN ID or address). Absent without an API.
   */
  read?(namespace: string, name: string): Promise<PodMetadata | undefined>;
  /**
   * Every pod bound to this node (recovery of a lost ledger asks which addresses live pods have).
   * Absent when there is no API to ask; throws when the API cannot be reached.
   */
  listOnNode?(): Promise<readonly PodMetadata[]>;
}

export const noPodSource: PodSource = { lookup: async () => undefined };
