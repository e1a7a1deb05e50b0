// The agent's placement mode (AgentConfig.eniPlacement) turned into the placer the pool manager asks.
import type { Cloud, InstanceMetadata } from '../../cloud/cloud.ts';
import type { EniPlacer } from './eni-placement.ts';
import { customNetworkPlacer, type NodeEniConfigSource } from './eni-placement-custom.ts';
import {
  discoveredSubnetPlacer,
  type PlacementCapacity,
  primarySubnetPlacerUnlessExcluded,
} from './eni-placement-discovery.ts';

export type EniPlacementMode = 'primary' | 'discovery' | 'custom';

export function eniPlacerFor(
  mode: EniPlacementMode,
  cloud: Cloud,
  metadata: InstanceMetadata,
  eniConfigs: NodeEniConfigSource | undefined,
  clusterName?: string,
  capacity?: PlacementCapacity,
): EniPlacer {
  switch (mode) {
    case 'primary':
      return primarySubnetPlacerUnlessExcluded(cloud, metadata);
    case 'discovery':
      return discoveredSubnetPlacer(cloud, metadata, clusterName, capacity);
    case 'custom':
      if (eniConfigs === undefined) {
        throw new Error(
          'custom networking needs the Kubernetes API to read the node ENIConfig, and none is configured',
        );
      }
      return customNetworkPlacer(cloud, metadata, eniConfigs);
  }
}
