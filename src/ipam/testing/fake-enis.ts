// The fake cloud's records (fake-cloud.ts): its ENIs and how EC2 describes them, the one
// instance's identity and subnet, and the lists of Cloud calls tests arm failures on.
import {
  type Cloud,
  CloudError,
  type DetachedEni,
  type EniInfo,
  type InstanceMetadata,
  type InstanceTypeLimits,
  type SubnetInfo,
} from '../../cloud/cloud.ts';
import { canonicalIpv6 } from '../../infra/ipv6-cidr.ts';

export interface FakeEni {
  readonly eniId: string;
  readonly mac: string;
  readonly subnetId: string;
  readonly primaryIp: string;
  readonly description: string;
  readonly interfaceType: string;
  readonly tags: Readonly<Record<string, string>>;
  secondaryIps: string[];
  ipv4Prefixes: string[];
  ipv6Prefixes?: string[];
  attachment?: {
    attachmentId: string;
    instanceId: string;
    deviceIndex: number;
    deleteOnTermination: boolean;
  };
}

export type FakeCloudMethod = keyof Cloud;

/** The calls that change the pool in EC2 (what a failing API refuses a growing or shrinking pool). */
export const CLOUD_MUTATIONS: readonly FakeCloudMethod[] = [
  'assignPrivateIps',
  'assignNamedPrivateIps',
  'assignNamedIpv4Prefixes',
  'unassignPrivateIps',
  'assignIpv4Prefixes',
  'unassignIpv4Prefixes',
  'assignIpv6Prefixes',
  'unassignIpv6Prefixes',
  'createEni',
  'attachEni',
  'setDeleteOnTermination',
  'detachEni',
  'deleteEni',
];

/** Every call of the Cloud interface: the reads, then the mutations. */
export const CLOUD_METHODS: readonly FakeCloudMethod[] = [
  'metadata',
  'vpcCidrs',
  'describeInstanceEnis',
  'describeDetachedEnis',
  'describeSubnets',
  'instanceTypeLimits',
  'describeTrunkAssociations',
  'describeBranchEnis',
  'subnetCidrReservations',
  'describeSubnetAddressUse',
  ...CLOUD_MUTATIONS,
];

export interface FakeCloudOptions {
  readonly limits?: InstanceTypeLimits;
  /** Secondary IPs the primary ENI starts with. */
  readonly primarySecondaryIps?: number;
  /**
   * Makes the node dual-stack: the subnet's /64 written as its first four groups
   * ("2001:db8:5e00:0"); the node gets <it>::10 as its primary IPv6 and /80s come from <it>:1:: up.
   */
  readonly ipv6Subnet?: string;
}

/** The instance's identity as IMDS gives it; dual-stack with `ipv6Subnet` (FakeCloudOptions). */
export function fakeInstanceMetadata(primaryIp: string, ipv6Subnet: string | undefined): InstanceMetadata {
  return {
    instanceId: 'i-0fake',
    instanceType: 't3.small',
    region: 'us-east-1',
    availabilityZone: 'us-east-1a',
    primaryMac: '02:00:00:00:00:01',
    primaryIp,
    subnetId: 'subnet-1',
    subnetCidr: '10.0.0.0/16',
    vpcId: 'vpc-1',
    vpcCidrs: ['10.0.0.0/16'],
    securityGroupIds: ['sg-1'],
    ...(ipv6Subnet === undefined
      ? {}
      : {
          primaryIpv6: canonicalIpv6(`${ipv6Subnet}::10`),
          subnetIpv6Cidrs: [`${ipv6Subnet}::/64`],
          vpcIpv6Cidrs: [`${ipv6Subnet}::/56`],
        }),
  };
}

/** The instance's subnet as DescribeSubnets shows it. */
export function instanceSubnet(meta: InstanceMetadata): SubnetInfo {
  return {
    subnetId: meta.subnetId,
    vpcId: meta.vpcId,
    availabilityZone: meta.availabilityZone,
    cidr: meta.subnetCidr,
    availableIpCount: 1000,
    tags: {},
  };
}

/** Another subnet of the fake instance's VPC and zone, with `free` addresses, as DescribeSubnets shows it. */
export function zoneSubnet(subnetId: string, free: number, more: Partial<SubnetInfo> = {}): SubnetInfo {
  return {
    subnetId,
    vpcId: 'vpc-1',
    availabilityZone: 'us-east-1a',
    cidr: '10.1.0.0/24',
    availableIpCount: free,
    tags: {},
    ...more,
  };
}

/** An ENI as DescribeNetworkInterfaces shows it, attached. */
export function eniInfoOf(e: FakeEni, subnetCidr: string): EniInfo {
  return {
    eniId: e.eniId,
    mac: e.mac,
    deviceNumber: e.attachment?.deviceIndex ?? 0,
    attachmentId: e.attachment?.attachmentId ?? '',
    subnetId: e.subnetId,
    subnetCidr,
    primaryIp: e.primaryIp,
    secondaryIps: [...e.secondaryIps],
    ...(e.ipv4Prefixes.length === 0 ? {} : { ipv4Prefixes: [...e.ipv4Prefixes] }),
    ...(e.ipv6Prefixes?.length ? { ipv6Prefixes: [...e.ipv6Prefixes] } : {}),
    description: e.description,
    interfaceType: e.interfaceType,
    tags: { ...e.tags },
  };
}

/** An ENI attached to nothing, as a leak collector sees it. */
export function detachedEniOf(e: FakeEni): DetachedEni {
  return {
    eniId: e.eniId,
    subnetId: e.subnetId,
    description: e.description,
    interfaceType: e.interfaceType,
    tags: { ...e.tags },
  };
}

/**
 * What an ENI keeps of `have` once `gone` is unassigned; EC2's InvalidParameterValue, naming
 * them, when some of `gone` (`what`: IPs, prefixes) are not assigned to it.
 */
export function withoutAssigned(
  have: readonly string[],
  gone: readonly string[],
  what: string,
  eniId: string,
): string[] {
  const missing = gone.filter((x) => !have.includes(x));
  if (missing.length > 0) {
    throw new CloudError(
      `Some of the ${what} are not assigned to ${eniId}: ${missing.join(', ')}`,
      'InvalidParameterValue',
      false,
    );
  }
  return have.filter((x) => !gone.includes(x));
}
