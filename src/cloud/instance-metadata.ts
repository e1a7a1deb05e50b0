// The instance's identity and primary-ENI network facts, read from IMDSv2.
import type { InstanceMetadata } from './cloud.ts';
import type { ImdsClient } from './imds.ts';

export async function readInstanceMetadata(imds: ImdsClient): Promise<InstanceMetadata> {
  const [instanceId, instanceType, availabilityZone, region, mac, primaryIp] = await Promise.all([
    scalar(imds, 'instance-id'),
    scalar(imds, 'instance-type'),
    scalar(imds, 'placement/availability-zone'),
    scalar(imds, 'placement/region'),
    scalar(imds, 'mac'),
    scalar(imds, 'local-ipv4'),
  ]);
  const eniPath = `network/interfaces/macs/${mac}`;
  const [subnetId, subnetCidr, vpcCidrs, securityGroupIds] = await Promise.all([
    scalar(imds, `${eniPath}/subnet-id`),
    scalar(imds, `${eniPath}/subnet-ipv4-cidr-block`),
    imds.getLines(`${eniPath}/vpc-ipv4-cidr-blocks`),
    imds.getLines(`${eniPath}/security-group-ids`),
  ]);
  return {
    instanceId,
    instanceType,
    region,
    availabilityZone,
    primaryMac: mac,
    primaryIp,
    subnetId,
    subnetCidr,
    vpcCidrs,
    securityGroupIds,
  };
}

async function scalar(imds: ImdsClient, path: string): Promise<string> {
  return (await imds.get(path)).trim();
}
