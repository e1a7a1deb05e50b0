// The cloud as the agent sees it. The production implementation (aws.ts) talks to EC2 with
// our own EC2 Query API client (ec2-query/) and IMDSv2; the same code talks to the emulator (only endpoints differ).
// Unit tests use a fake implementing this interface.

export interface InstanceMetadata {
  readonly instanceId: string;
  readonly instanceType: string;
  readonly region: string;
  readonly availabilityZone: string;
  /** MAC of the primary ENI (device 0). */
  readonly primaryMac: string;
  readonly primaryIp: string;
  readonly subnetId: string;
  readonly subnetCidr: string;
  /** The VPC of the primary ENI (IMDS `vpc-id`): subnet discovery looks only inside it. */
  readonly vpcId: string;
  readonly vpcCidrs: readonly string[];
  readonly securityGroupIds: readonly string[];
  /** IPv6 facts of a dual-stack node (IMDS ipv6s, subnet-/vpc-ipv6-cidr-blocks); absent on IPv4-only. */
  readonly primaryIpv6?: string;
  readonly subnetIpv6Cidrs?: readonly string[];
  readonly vpcIpv6Cidrs?: readonly string[];
}

export interface EniInfo {
  readonly eniId: string;
  readonly mac: string;
  /** Device index of the ENI's attachment to the instance (0 = primary ENI). */
  readonly deviceNumber: number;
  /** EC2's ID of the ENI's attachment to the instance (DetachNetworkInterface takes it). */
  readonly attachmentId: string;
  readonly subnetId: string;
  readonly subnetCidr: string;
  readonly primaryIp: string;
  /** Secondary private IPs (primary not included). */
  readonly secondaryIps: readonly string[];
  /** Delegated IPv4 prefixes (/28 CIDRs, EC2's Ipv4Prefixes); absent when the ENI has none. */
  readonly ipv4Prefixes?: readonly string[];
  /** IPv6 addresses (canonical text, EC2's Ipv6Addresses); absent when the ENI has none. */
  readonly ipv6Addresses?: readonly string[];
  /** Delegated IPv6 prefixes (/80 CIDRs, canonical text, EC2's Ipv6Prefixes); absent when none. */
  readonly ipv6Prefixes?: readonly string[];
  /** The ENI's description; vpcnet marks the ENIs it creates with it (eni-attach.ts). */
  readonly description?: string;
  /**
   * EC2's InterfaceType ("interface" when EC2 leaves it out): a "trunk" carries branch ENIs for
   * pods with their own security groups, an "efa" serves HPC traffic; neither lends addresses.
   */
  readonly interfaceType: string;
  /** The ENI's tags (TagSet), e.g. node.k8s.amazonaws.com/no_manage=true. */
  readonly tags: Readonly<Record<string, string>>;
  /** Idle timeouts EC2 tracks the ENI's connections with (ConnectionTrackingConfiguration); absent: EC2's defaults. */
  readonly connectionTracking?: ConnectionTracking;
}

/**
 * An ENI's connection-tracking idle timeouts, seconds (EC2's ConnectionTrackingSpecification on
 * create, ConnectionTrackingConfiguration in a describe); a timeout left out is EC2's default.
 */
export interface ConnectionTracking {
  readonly tcpEstablishedTimeout?: number;
  readonly udpStreamTimeout?: number;
  readonly udpTimeout?: number;
}

/** An ENI attached to nothing (EC2 status "available"), as a leak collector sees it. */
export interface DetachedEni {
  readonly eniId: string;
  readonly subnetId: string;
  readonly description?: string;
  readonly interfaceType: string;
  readonly tags: Readonly<Record<string, string>>;
}

/** A subnet as DescribeSubnets shows it: where a new ENI may go. */
export interface SubnetInfo {
  readonly subnetId: string;
  readonly vpcId: string;
  readonly availabilityZone: string;
  readonly cidr: string;
  /** EC2's AvailableIpAddressCount: addresses nothing holds yet. */
  readonly availableIpCount: number;
  readonly tags: Readonly<Record<string, string>>;
}

/** Which subnets describeSubnets lists: by ID, or every subnet of one zone of one VPC. */
export type SubnetQuery =
  | { readonly subnetIds: readonly string[] }
  | { readonly availabilityZone: string; readonly vpcId: string };

/** A subnet CIDR reservation (GetSubnetCidrReservations): a range EC2 picks no /32 from on its own. */
export interface SubnetCidrReservation {
  readonly reservationId: string;
  readonly cidr: string;
  /** `prefix`: where prefix delegation takes /28s first; `explicit`: its owner names what is assigned. */
  readonly type: 'prefix' | 'explicit';
}

/** What a subnet's ENIs hold (DescribeNetworkInterfaces filtered by the subnet, every page). */
export interface SubnetAddressUse {
  readonly enis: number;
  /** Every private IPv4 address of those ENIs, primaries included. */
  readonly addresses: readonly string[];
  /** Every delegated /28 of those ENIs. */
  readonly prefixes: readonly string[];
}

export interface InstanceTypeLimits {
  readonly maxEnis: number;
  /** IPv4 addresses per ENI, including the ENI's primary address. */
  readonly ipsPerEni: number;
}

export interface CreatedEni {
  readonly eniId: string;
  readonly mac: string;
  readonly primaryIp: string;
}

/** Typed cloud failure; `code` is the EC2 error code (e.g. "AttachmentLimitExceeded") or "IMDS". */
export class CloudError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly retryable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'CloudError';
  }
}

/** One branch ENI on a trunk, as EC2's DescribeTrunkInterfaceAssociations lists it. */
export interface TrunkAssociation {
  readonly associationId: string;
  readonly branchEniId: string;
  readonly trunkEniId: string;
  readonly vlanId: number;
}

/** What EC2 says of a branch ENI (DescribeNetworkInterfaces): what a pod-eni annotation claims. */
export interface BranchEniFacts {
  readonly eniId: string;
  /** Lower case. */
  readonly mac: string;
  /** Its primary private IPv4 address: the pod's. */
  readonly ip: string;
  readonly subnetId: string;
  readonly subnetCidr: string;
}

export interface Cloud {
  /** Instance identity and network facts, from IMDSv2. */
  metadata(): Promise<InstanceMetadata>;
  /** The VPC's IPv4 CIDR blocks now: one IMDS read (the primary ENI's `vpc-ipv4-cidr-blocks`). */
  vpcCidrs(primaryMac: string): Promise<string[]>;
  /** ENIs attached to the instance, from EC2 DescribeNetworkInterfaces (attachment.instance-id filter). */
  describeInstanceEnis(instanceId: string): Promise<EniInfo[]>;
  /**
   * ENIs attached to nothing (status "available") that carry tag `tagKey`=`tagValue`, from EC2
   * DescribeNetworkInterfaces; e.g. the ENIs created for one instance and left behind by a crash.
   */
  describeDetachedEnis(tagKey: string, tagValue: string): Promise<DetachedEni[]>;
  instanceTypeLimits(instanceType: string): Promise<InstanceTypeLimits>;
  /**
   * The branch ENIs associated with trunk `trunkEniId` and their VLAN IDs, from EC2
   * DescribeTrunkInterfaceAssociations (every page, filtered by the trunk).
   */
  describeTrunkAssociations(trunkEniId: string): Promise<TrunkAssociation[]>;
  /** The ENIs asked for, from EC2 DescribeNetworkInterfaces; an ID EC2 does not know is left out. */
  describeBranchEnis(eniIds: readonly string[]): Promise<BranchEniFacts[]>;
  /**
   * EC2 DescribeSubnets, every page: the subnets asked for (an unknown ID fails with
   * InvalidSubnetID.NotFound).
   */
  describeSubnets(query: SubnetQuery): Promise<SubnetInfo[]>;
  /** GetSubnetCidrReservations of one subnet, every page (its IPv4 reservations). */
  subnetCidrReservations(subnetId: string): Promise<SubnetCidrReservation[]>;
  /**
   * DescribeNetworkInterfaces filtered by the subnet, every page of the largest size EC2 allows:
   * what every ENI in it holds, whoever's it is (a census of the subnet's free /28s).
   */
  describeSubnetAddressUse(subnetId: string): Promise<SubnetAddressUse>;
  /** AssignPrivateIpAddresses with SecondaryPrivateIpAddressCount; returns the new addresses. */
  assignPrivateIps(eniId: string, count: number): Promise<string[]>;
  /**
   * AssignPrivateIpAddresses with PrivateIpAddress.N: exactly these addresses, all or nothing. EC2
   * answers InvalidParameterValue when one is in use or reserved (someone took it meanwhile).
   */
  assignNamedPrivateIps(eniId: string, ips: readonly string[]): Promise<string[]>;
  unassignPrivateIps(eniId: string, ips: readonly string[]): Promise<void>;
  /**
   * AssignPrivateIpAddresses with Ipv4PrefixCount: `count` /28 prefixes; returns them as CIDRs.
   * EC2 answers InsufficientCidrBlocks when the subnet has no aligned free /28 left.
   */
  assignIpv4Prefixes(eniId: string, count: number): Promise<string[]>;
  /**
   * AssignPrivateIpAddresses with Ipv4Prefix.N: exactly these /28s, all or nothing. EC2 answers
   * InvalidParameterValue when an address of one is in use or reserved (taken meanwhile).
   */
  assignNamedIpv4Prefixes(eniId: string, prefixes: readonly string[]): Promise<string[]>;
  /** UnassignPrivateIpAddresses with Ipv4Prefix.N. */
  unassignIpv4Prefixes(eniId: string, prefixes: readonly string[]): Promise<void>;
  /**
   * AssignIpv6Addresses with Ipv6PrefixCount: `count` /80 prefixes, as canonical CIDRs. EC2 refuses
   * it (InvalidParameterValue) when the ENI's subnet has no IPv6 CIDR block.
   */
  assignIpv6Prefixes(eniId: string, count: number): Promise<string[]>;
  /** UnassignIpv6Addresses with Ipv6Prefix.N. */
  unassignIpv6Prefixes(eniId: string, prefixes: readonly string[]): Promise<void>;
  /**
   * CreateNetworkInterface. `tags` go on the ENI at creation (TagSpecifications), so an ENI
   * whose attach never happened can still be found and collected by its owner tag.
   * `clientToken` (EC2's idempotency token, at most 64 ASCII characters): a call repeated with
   * the same token returns the ENI the first one created instead of creating another, so a retry
   * after a lost reply is safe. Without it, each call is a new request. `connectionTracking`
   * (ConnectionTrackingSpecification) sets the new ENI's timeouts; only those given are sent.
   * `primaryIp` (PrivateIpAddress) names the ENI's primary address instead of letting EC2 pick
   * one; EC2 answers InvalidIPAddress.InUse when it is taken.
   */
  createEni(
    subnetId: string,
    securityGroupIds: readonly string[],
    description: string,
    tags?: Readonly<Record<string, string>>,
    clientToken?: string,
    connectionTracking?: ConnectionTracking,
    primaryIp?: string,
  ): Promise<CreatedEni>;
  /** Returns EC2's ID of the new ENI attachment. */
  attachEni(eniId: string, instanceId: string, deviceIndex: number): Promise<string>;
  /** Sets DeleteOnTermination on the ENI's attachment (as the upstream does for ENIs it creates). */
  setDeleteOnTermination(eniId: string, attachmentId: string): Promise<void>;
  detachEni(attachmentId: string): Promise<void>;
  deleteEni(eniId: string): Promise<void>;
}
