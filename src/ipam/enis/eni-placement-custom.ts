// Custom networking (AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG): new ENIs go into the subnet and security
// groups of the node's ENIConfig (no security groups there: the primary ENI's, as upstream), and
// the primary ENI carries no pods. The ENIConfig's subnet must exist, be in the node's VPC and in
// its zone (EC2 would refuse to attach an ENI of another zone); otherwise the error says so.
import type { Cloud, InstanceMetadata, SubnetInfo } from '../../cloud/cloud.ts';
import { cloudErrorText } from '../cloud-sync/cloud-error-text.ts';
import { EniPlacementError, type EniPlacer } from './eni-placement.ts';

/** The node's ENIConfig as the placement needs it (src/pods/eni-config.ts reads it). */
export interface NodeEniConfigSource {
  /** Rejects with a message naming the ENIConfig and why it cannot be had. */
  current(): Promise<{
    readonly name: string;
    readonly chosenBy: string;
    readonly subnetId: string;
    readonly securityGroupIds: readonly string[];
  }>;
}

export function customNetworkPlacer(
  cloud: Cloud,
  metadata: InstanceMetadata,
  configs: NodeEniConfigSource,
): EniPlacer {
  return {
    primaryEniCarriesPods: false,
    async next() {
      let config: Awaited<ReturnType<NodeEniConfigSource['current']>>;
      try {
        config = await configs.current();
      } catch (err) {
        throw new EniPlacementError(`custom networking: ${cloudErrorText(err)}`, { cause: err });
      }
      const what = `custom networking: ENIConfig ${config.name} (${config.chosenBy})`;
      const ids = [...new Set([config.subnetId, metadata.subnetId])];
      let subnets: SubnetInfo[];
      try {
        subnets = await cloud.describeSubnets({ subnetIds: ids });
      } catch (err) {
        const code = (err as { code?: unknown }).code;
        if (code === 'InvalidSubnetID.NotFound') {
          throw new EniPlacementError(`${what} names subnet ${config.subnetId}, which does not exist`, {
            cause: err,
          });
        }
        throw new Error(`${what}: cannot describe subnet ${config.subnetId}: ${cloudErrorText(err)}`, {
          cause: err,
        });
      }
      const subnet = subnets.find((s) => s.subnetId === config.subnetId);
      const primary = subnets.find((s) => s.subnetId === metadata.subnetId);
      if (subnet === undefined) {
        throw new EniPlacementError(`${what} names subnet ${config.subnetId}, which does not exist`);
      }
      if (subnet.availabilityZone !== metadata.availabilityZone) {
        throw new EniPlacementError(
          `${what} names subnet ${subnet.subnetId} in ${subnet.availabilityZone}, but the node is in ${metadata.availabilityZone}`,
        );
      }
      if (primary !== undefined && subnet.vpcId !== primary.vpcId) {
        throw new EniPlacementError(
          `${what} names subnet ${subnet.subnetId} of ${subnet.vpcId}, but the node is in ${primary.vpcId}`,
        );
      }
      return {
        subnetId: subnet.subnetId,
        subnetCidr: subnet.cidr,
        securityGroupIds:
          config.securityGroupIds.length > 0 ? config.securityGroupIds : metadata.securityGroupIds,
        reason: `ENIConfig ${config.name}`,
      };
    },
  };
}
