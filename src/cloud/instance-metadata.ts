// The instance's identity and primary-ENI network facts, read from IMDSv2. Addresses and CIDRs are
// checked here, once: everything downstream trusts them.
import { isCidr, isIpv4 } from '../infra/ipv4.ts';
import type { InstanceMetadata } from './cloud.ts';
import { type ImdsClient, ImdsError } from './imds.ts';
import { readIpv6Facts } from './instance-metadata-ipv6.ts';

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
  const [subnetId, subnetCidr, vpcId, vpcCidrs, securityGroupIds, ipv6] = await Promise.all([
    scalar(imds, `${eniPath}/subnet-id`),
    scalar(imds, `${eniPath}/subnet-ipv4-cidr-block`),
    scalar(imds, `${eniPath}/vpc-id`),
    readVpcCidrs(imds, mac),
    imds.getLines(`${eniPath}/security-group-ids`),
    readIpv6Facts(imds, eniPath),
  ]);
  checkFormat('local-ipv4', [primaryIp], isIpv4, 'an IPv4 address');
  checkFormat(`${eniPath}/subnet-ipv4-cidr-block`, [subnetCidr], isCidr, 'an IPv4 CIDR');
  return {
    instanceId,
    instanceType,
    region,
    availabilityZone,
    primaryMac: mac,
    primaryIp,
    subnetId,
    subnetCidr,
    vpcId,
    vpcCidrs,
    securityGroupIds,
    ...ipv6,
  };
}

/** The VPC's IPv4 CIDR blocks, as the primary ENI's metadata lists them: one GET. */
export async function readVpcCidrs(imds: ImdsClient, primaryMac: string): Promise<string[]> {
  const path = `network/interfaces/macs/${primaryMac}/vpc-ipv4-cidr-blocks`;
  const cidrs = await imds.getLines(path);
  checkFormat(path, cidrs, isCidr, 'a list of IPv4 CIDRs');
  return cidrs;
}

async function scalar(imds: ImdsClient, path: string): Promise<string> {
  return (await imds.get(path)).trim();
}

/** IMDS answered with something that is not what the path holds: a final error (a retry reads the same). */
function checkFormat(
  path: string,
  values: readonly string[],
  valid: (text: string) => boolean,
  what: string,
): void {
  if (values.length > 0 && values.every(valid)) return;
  throw new ImdsError(`IMDS ${path} is not ${what}: ${JSON.stringify(values.join('\n'))}`, path, 200, false);
}
