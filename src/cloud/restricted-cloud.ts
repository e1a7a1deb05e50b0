// The cloud as a locked-down VPC allows it to the agent, as decorators of any Cloud:
//   ReadOnlyCloud (DISABLE_NETWORK_RESOURCE_PROVISIONING): EC2 describes, no change of any ENI
//     or address; someone else attached them.
//   ImdsOnlyCloud (ENABLE_IMDS_ONLY_MODE): no EC2 call at all; the instance, its ENIs and their
//     addresses from instance metadata.
// A refused call fails with the setting that refuses it, before anything is sent: the pool is
// built not to ask, so such an error names a path that should not have been taken.
import {
  type BranchEniFacts,
  type Cloud,
  CloudError,
  type CreatedEni,
  type DetachedEni,
  type EniInfo,
  type InstanceMetadata,
  type InstanceTypeLimits,
  type SubnetAddressUse,
  type SubnetCidrReservation,
  type SubnetInfo,
  type SubnetQuery,
  type TrunkAssociation,
} from './cloud.ts';
import type { ImdsClient } from './imds.ts';
import { limitsOfAttached, readAttachedEnis } from './imds-enis.ts';

/** The code of a call the configuration rules out. */
export const REFUSED_BY_SETTING = 'RefusedBySetting';

export class ReadOnlyCloud implements Cloud {
  protected readonly inner: Cloud;
  /** The setting that rules the calls out, e.g. "DISABLE_NETWORK_RESOURCE_PROVISIONING=true". */
  protected readonly setting: string;

  constructor(inner: Cloud, setting = 'DISABLE_NETWORK_RESOURCE_PROVISIONING=true') {
    this.inner = inner;
    this.setting = setting;
  }

  /** A call this cloud does not make, failed at once. */
  protected refused(action: string, what = 'changes no ENI or address'): Promise<never> {
    return Promise.reject(
      new CloudError(`${this.setting}: vpcnet ${what} (${action} not sent)`, REFUSED_BY_SETTING, false),
    );
  }

  metadata(): Promise<InstanceMetadata> {
    return this.inner.metadata();
  }

  vpcCidrs(primaryMac: string): Promise<string[]> {
    return this.inner.vpcCidrs(primaryMac);
  }

  describeInstanceEnis(instanceId: string): Promise<EniInfo[]> {
    return this.inner.describeInstanceEnis(instanceId);
  }

  describeDetachedEnis(tagKey: string, tagValue: string): Promise<DetachedEni[]> {
    return this.inner.describeDetachedEnis(tagKey, tagValue);
  }

  instanceTypeLimits(instanceType: string): Promise<InstanceTypeLimits> {
    return this.inner.instanceTypeLimits(instanceType);
  }

  describeTrunkAssociations(trunkEniId: string): Promise<TrunkAssociation[]> {
    return this.inner.describeTrunkAssociations(trunkEniId);
  }

  describeBranchEnis(eniIds: readonly string[]): Promise<BranchEniFacts[]> {
    return this.inner.describeBranchEnis(eniIds);
  }

  describeSubnets(query: SubnetQuery): Promise<SubnetInfo[]> {
    return this.inner.describeSubnets(query);
  }

  subnetCidrReservations(subnetId: string): Promise<SubnetCidrReservation[]> {
    return this.inner.subnetCidrReservations(subnetId);
  }

  describeSubnetAddressUse(subnetId: string): Promise<SubnetAddressUse> {
    return this.inner.describeSubnetAddressUse(subnetId);
  }

  assignPrivateIps(): Promise<string[]> {
    return this.refused('AssignPrivateIpAddresses');
  }

  assignNamedPrivateIps(): Promise<string[]> {
    return this.refused('AssignPrivateIpAddresses');
  }

  unassignPrivateIps(): Promise<void> {
    return this.refused('UnassignPrivateIpAddresses');
  }

  assignIpv4Prefixes(): Promise<string[]> {
    return this.refused('AssignPrivateIpAddresses');
  }

  assignNamedIpv4Prefixes(): Promise<string[]> {
    return this.refused('AssignPrivateIpAddresses');
  }

  unassignIpv4Prefixes(): Promise<void> {
    return this.refused('UnassignPrivateIpAddresses');
  }

  assignIpv6Prefixes(): Promise<string[]> {
    return this.refused('AssignIpv6Addresses');
  }

  unassignIpv6Prefixes(): Promise<void> {
    return this.refused('UnassignIpv6Addresses');
  }

  createEni(): Promise<CreatedEni> {
    return this.refused('CreateNetworkInterface');
  }

  attachEni(): Promise<string> {
    return this.refused('AttachNetworkInterface');
  }

  setDeleteOnTermination(): Promise<void> {
    return this.refused('ModifyNetworkInterfaceAttribute');
  }

  detachEni(): Promise<void> {
    return this.refused('DetachNetworkInterface');
  }

  deleteEni(): Promise<void> {
    return this.refused('DeleteNetworkInterface');
  }
}

/**
 * No EC2 call: `metadata` and `vpcCidrs` are IMDS reads already; the ENIs are read from IMDS
 * (imds-enis.ts) and the limits are what is attached. Every other call is refused.
 */
export class ImdsOnlyCloud extends ReadOnlyCloud {
  readonly #imds: ImdsClient;

  constructor(inner: Cloud, imds: ImdsClient) {
    super(inner, 'ENABLE_IMDS_ONLY_MODE=true');
    this.#imds = imds;
  }

  #noEc2(action: string): Promise<never> {
    return this.refused(action, 'makes no EC2 call');
  }

  /** The instance's ENIs from IMDS; `instanceId` is the caller's own instance, the one IMDS answers for. */
  override describeInstanceEnis(): Promise<EniInfo[]> {
    return readAttachedEnis(this.#imds);
  }

  override async instanceTypeLimits(): Promise<InstanceTypeLimits> {
    return limitsOfAttached(await readAttachedEnis(this.#imds));
  }

  override describeDetachedEnis(): Promise<DetachedEni[]> {
    return this.#noEc2('DescribeNetworkInterfaces');
  }

  override describeTrunkAssociations(): Promise<TrunkAssociation[]> {
    return this.#noEc2('DescribeTrunkInterfaceAssociations');
  }

  override describeBranchEnis(): Promise<BranchEniFacts[]> {
    return this.#noEc2('DescribeNetworkInterfaces');
  }

  override describeSubnets(): Promise<SubnetInfo[]> {
    return this.#noEc2('DescribeSubnets');
  }

  override subnetCidrReservations(): Promise<SubnetCidrReservation[]> {
    return this.#noEc2('GetSubnetCidrReservations');
  }

  override describeSubnetAddressUse(): Promise<SubnetAddressUse> {
    return this.#noEc2('DescribeNetworkInterfaces');
  }
}

/** The cloud the configuration allows: all of it, EC2 without changes, or instance metadata alone. */
export function allowedCloud(
  access: { readonly provisioning: boolean; readonly imdsOnly: boolean },
  inner: Cloud,
  imds: ImdsClient,
): Cloud {
  if (access.imdsOnly) return new ImdsOnlyCloud(inner, imds);
  return access.provisioning ? inner : new ReadOnlyCloud(inner);
}
