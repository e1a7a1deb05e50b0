// The production Cloud: EC2 through our own Query API client (ec2-query/), instance facts through
// IMDSv2. The emulator speaks the same wire protocols, so only endpoints differ between the two.
import { isCidr, isIpv4 } from '../infra/ipv4.ts';
import {
  type AssignedKind,
  assignmentParams,
  assignmentText,
  checkAssigned,
  IPV4_PREFIXES,
  SECONDARY_IPS,
} from './aws-assignment.ts';
import { connectionTrackingParams } from './aws-connection-tracking.ts';
import { assignIpv6Prefixes, unassignIpv6Prefixes } from './aws-ipv6.ts';
import {
  type Ec2NetworkInterface,
  readNetworkInterface,
  toBranchEniFacts,
  toDetachedEni,
  toEniInfo,
} from './aws-network-interface.ts';
import { readSubnet, subnetQueryParams, subnetQueryText } from './aws-subnet.ts';
import { addressUseOf, readCidrReservation, subnetEnisParams } from './aws-subnet-census.ts';
import { readTrunkAssociation } from './aws-trunk-association.ts';
import type {
  BranchEniFacts,
  Cloud,
  ConnectionTracking,
  CreatedEni,
  DetachedEni,
  EniInfo,
  InstanceMetadata,
  InstanceTypeLimits,
  SubnetAddressUse,
  SubnetCidrReservation,
  SubnetInfo,
  SubnetQuery,
  TrunkAssociation,
} from './cloud.ts';
import { CloudError } from './cloud.ts';
import { invalidResponse, toCloudError } from './ec2-errors.ts';
import type { Ec2Api } from './ec2-query/ec2-query-client.ts';
import type { QueryStruct } from './ec2-query/query-form.ts';
import type { XmlElement } from './ec2-query/xml-reader.ts';
import type { ImdsClient } from './imds.ts';
import { readInstanceMetadata, readVpcCidrs } from './instance-metadata.ts';

/** ENI IDs per DescribeNetworkInterfaces filter (EC2 takes up to 200 values per filter). */
const BRANCH_ENIS_PER_CALL = 200;

export interface AwsCloudDeps {
  readonly ec2: Ec2Api;
  readonly imds: ImdsClient;
}

export class AwsCloud implements Cloud {
  private readonly ec2: Ec2Api;
  /** The instance metadata client (IMDS-only mode reads the ENIs through it). */
  readonly imds: ImdsClient;
  /** Instance type limits and subnet CIDRs never change: asked once, failures not cached. */
  private readonly limitsCache = new Map<string, Promise<InstanceTypeLimits>>();
  private readonly subnetCidrCache = new Map<string, Promise<string>>();

  constructor(deps: AwsCloudDeps) {
    this.ec2 = deps.ec2;
    this.imds = deps.imds;
  }

  metadata(): Promise<InstanceMetadata> {
    return readInstanceMetadata(this.imds);
  }

  vpcCidrs(primaryMac: string): Promise<string[]> {
    return readVpcCidrs(this.imds, primaryMac);
  }

  async describeInstanceEnis(instanceId: string): Promise<EniInfo[]> {
    const doing = `describe ENIs of ${instanceId}`;
    const found = await this.describeEnis(doing, [{ Name: 'attachment.instance-id', Value: [instanceId] }]);
    const enis = await Promise.all(found.map((eni) => toEniInfo(doing, eni, (id) => this.subnetCidr(id))));
    return enis.sort((a, b) => a.deviceNumber - b.deviceNumber);
  }

  async describeDetachedEnis(tagKey: string, tagValue: string): Promise<DetachedEni[]> {
    const doing = `describe detached ENIs tagged ${tagKey}=${tagValue}`;
    const found = await this.describeEnis(doing, [
      { Name: 'status', Value: ['available'] },
      { Name: `tag:${tagKey}`, Value: [tagValue] },
    ]);
    return found.map((eni) => toDetachedEni(doing, eni));
  }

  /** Every page of one DescribeNetworkInterfaces query. */
  private describeEnis(doing: string, filters: QueryStruct[]): Promise<Ec2NetworkInterface[]> {
    return this.allPages(doing, 'DescribeNetworkInterfaces', { Filter: filters }, (r) =>
      r.items('networkInterfaceSet').map(readNetworkInterface),
    );
  }

  async describeTrunkAssociations(trunkEniId: string): Promise<TrunkAssociation[]> {
    const doing = `describe the branch ENIs of trunk ${trunkEniId}`;
    const found = await this.allPages(
      doing,
      'DescribeTrunkInterfaceAssociations',
      {
        Filter: [{ Name: 'trunk-interface-association.trunk-interface-id', Value: [trunkEniId] }],
        MaxResults: 255,
      },
      (r) => r.items('interfaceAssociationSet').map((x) => readTrunkAssociation(doing, x)),
    );
    return found.filter((a) => a.trunkEniId === trunkEniId);
  }

  async describeBranchEnis(eniIds: readonly string[]): Promise<BranchEniFacts[]> {
    const out: BranchEniFacts[] = [];
    // A filter (not NetworkInterfaceId.N): an unknown ID is left out instead of failing the call.
    for (let i = 0; i < eniIds.length; i += BRANCH_ENIS_PER_CALL) {
      const ids = eniIds.slice(i, i + BRANCH_ENIS_PER_CALL);
      const doing = `describe branch ENIs ${ids.join(', ')}`;
      const found = await this.describeEnis(doing, [{ Name: 'network-interface-id', Value: ids }]);
      for (const eni of found) out.push(await toBranchEniFacts(doing, eni, (id) => this.subnetCidr(id)));
    }
    return out;
  }

  /** Every page of one Describe* query: its items, following NextToken until the last page. */
  private async allPages<T>(
    doing: string,
    action: string,
    params: QueryStruct,
    items: (reply: XmlElement) => T[],
  ): Promise<T[]> {
    const found: T[] = [];
    let nextToken: string | undefined;
    do {
      const page = await this.call(doing, action, { ...params, NextToken: nextToken }, (r) => ({
        items: items(r),
        nextToken: r.string('nextToken'),
      }));
      found.push(...page.items);
      nextToken = page.nextToken !== undefined && page.nextToken !== '' ? page.nextToken : undefined;
    } while (nextToken !== undefined);
    return found;
  }

  instanceTypeLimits(instanceType: string): Promise<InstanceTypeLimits> {
    return cached(this.limitsCache, instanceType, () => this.fetchLimits(instanceType));
  }

  describeSubnets(query: SubnetQuery): Promise<SubnetInfo[]> {
    const doing = subnetQueryText(query);
    return this.allPages(doing, 'DescribeSubnets', subnetQueryParams(query), (r) =>
      r.items('subnetSet').map((xml) => readSubnet(doing, xml)),
    );
  }

  subnetCidrReservations(subnetId: string): Promise<SubnetCidrReservation[]> {
    const doing = `get the CIDR reservations of subnet ${subnetId}`;
    return this.allPages(doing, 'GetSubnetCidrReservations', { SubnetId: subnetId, MaxResults: 1000 }, (r) =>
      r.items('subnetIpv4CidrReservationSet').map((x) => readCidrReservation(doing, x)),
    );
  }

  async describeSubnetAddressUse(subnetId: string): Promise<SubnetAddressUse> {
    const doing = `describe the ENIs of subnet ${subnetId}`;
    const enis = await this.allPages(doing, 'DescribeNetworkInterfaces', subnetEnisParams(subnetId), (r) =>
      r.items('networkInterfaceSet').map(readNetworkInterface),
    );
    return addressUseOf(doing, enis);
  }

  assignPrivateIps(eniId: string, count: number): Promise<string[]> {
    return this.assignToEni(eniId, count, SECONDARY_IPS);
  }

  async assignNamedPrivateIps(eniId: string, ips: readonly string[]): Promise<string[]> {
    const doing = `assign private IPs ${ips.join(', ')} to ENI ${eniId}`;
    if (ips.length === 0 || !ips.every(isIpv4)) {
      throw new CloudError(
        `cannot ${doing}: give one or more IPv4 addresses`,
        'InvalidParameterValue',
        false,
      );
    }
    const assigned = await this.call(
      doing,
      'AssignPrivateIpAddresses',
      { NetworkInterfaceId: eniId, PrivateIpAddress: [...ips] },
      (r) => r.items(SECONDARY_IPS.resultSet).map((a) => a.string(SECONDARY_IPS.resultField)),
    );
    // All or nothing: EC2 assigns exactly what was named, or fails the call.
    const got = new Set(assigned);
    if (assigned.length !== ips.length || !ips.every((ip) => got.has(ip))) {
      throw invalidResponse(
        doing,
        `AssignedPrivateIpAddresses ${JSON.stringify(ips)} (got ${JSON.stringify(assigned)})`,
      );
    }
    return [...ips];
  }

  async unassignPrivateIps(eniId: string, ips: readonly string[]): Promise<void> {
    if (ips.length === 0) return;
    const shown = ips.length <= 4 ? ips.join(', ') : `${ips.slice(0, 4).join(', ')}, …`;
    await this.call(
      `unassign ${ips.length} private IPs (${shown}) from ENI ${eniId}`,
      'UnassignPrivateIpAddresses',
      { NetworkInterfaceId: eniId, PrivateIpAddress: [...ips] },
      () => undefined,
    );
  }

  assignIpv4Prefixes(eniId: string, count: number): Promise<string[]> {
    return this.assignToEni(eniId, count, IPV4_PREFIXES);
  }

  async assignNamedIpv4Prefixes(eniId: string, prefixes: readonly string[]): Promise<string[]> {
    const doing = `assign IPv4 prefixes ${prefixes.join(', ')} to ENI ${eniId}`;
    if (prefixes.length === 0 || !prefixes.every(isCidr)) {
      throw new CloudError(`cannot ${doing}: give one or more /28 prefixes`, 'InvalidParameterValue', false);
    }
    const assigned = await this.call(
      doing,
      'AssignPrivateIpAddresses',
      { NetworkInterfaceId: eniId, Ipv4Prefix: [...prefixes] },
      (r) => r.items(IPV4_PREFIXES.resultSet).map((a) => a.string(IPV4_PREFIXES.resultField)),
    );
    const got = new Set(assigned);
    if (assigned.length !== prefixes.length || !prefixes.every((p) => got.has(p))) {
      throw invalidResponse(
        doing,
        `AssignedIpv4Prefixes ${JSON.stringify(prefixes)} (got ${JSON.stringify(assigned)})`,
      );
    }
    return [...prefixes];
  }

  async unassignIpv4Prefixes(eniId: string, prefixes: readonly string[]): Promise<void> {
    if (prefixes.length === 0) return;
    await this.call(
      `unassign IPv4 prefixes ${prefixes.join(', ')} from ENI ${eniId}`,
      'UnassignPrivateIpAddresses',
      { NetworkInterfaceId: eniId, Ipv4Prefix: [...prefixes] },
      () => undefined,
    );
  }

  assignIpv6Prefixes(eniId: string, count: number): Promise<string[]> {
    return assignIpv6Prefixes(this.ec2, eniId, count);
  }

  unassignIpv6Prefixes(eniId: string, prefixes: readonly string[]): Promise<void> {
    return unassignIpv6Prefixes(this.ec2, eniId, prefixes);
  }

  async createEni(
    subnetId: string,
    securityGroupIds: readonly string[],
    description: string,
    tags?: Readonly<Record<string, string>>,
    clientToken?: string,
    connectionTracking?: ConnectionTracking,
    primaryIp?: string,
  ): Promise<CreatedEni> {
    const named = primaryIp === undefined ? '' : ` at ${primaryIp}`;
    const doing = `create ENI in ${subnetId}${named} with security groups ${securityGroupIds.join(',') || '(none)'}`;
    const tagList = Object.entries(tags ?? {}).map(([Key, Value]) => ({ Key, Value }));
    // ClientToken is EC2's idempotency token. A caller that retries (LimitedCloud) passes the
    // same token on every attempt, so a lost reply cannot leave a second ENI behind; without
    // one, each call is a new request.
    const eni = await this.call(
      doing,
      'CreateNetworkInterface',
      {
        SubnetId: subnetId,
        ...(primaryIp === undefined ? {} : { PrivateIpAddress: primaryIp }),
        SecurityGroupId: [...securityGroupIds],
        Description: description,
        ClientToken: clientToken,
        TagSpecification:
          tagList.length > 0 ? [{ ResourceType: 'network-interface', Tag: tagList }] : undefined,
        ...withConnectionTracking(connectionTracking),
      },
      (r) => {
        const created = r.child('networkInterface');
        return created === undefined ? undefined : readNetworkInterface(created);
      },
    );
    if (eni?.networkInterfaceId === undefined)
      throw invalidResponse(doing, 'NetworkInterface.NetworkInterfaceId');
    if (eni.macAddress === undefined) throw invalidResponse(doing, `MacAddress of ${eni.networkInterfaceId}`);
    if (eni.privateIpAddress === undefined || !isIpv4(eni.privateIpAddress)) {
      throw invalidResponse(doing, `an IPv4 PrivateIpAddress of ${eni.networkInterfaceId}`);
    }
    return { eniId: eni.networkInterfaceId, mac: eni.macAddress, primaryIp: eni.privateIpAddress };
  }

  async attachEni(eniId: string, instanceId: string, deviceIndex: number): Promise<string> {
    const doing = `attach ENI ${eniId} to ${instanceId} at device index ${deviceIndex}`;
    const attachmentId = await this.call(
      doing,
      'AttachNetworkInterface',
      { NetworkInterfaceId: eniId, InstanceId: instanceId, DeviceIndex: deviceIndex },
      (r) => r.string('attachmentId'),
    );
    if (attachmentId === undefined || attachmentId === '') throw invalidResponse(doing, 'AttachmentId');
    return attachmentId;
  }

  async setDeleteOnTermination(eniId: string, attachmentId: string): Promise<void> {
    await this.call(
      `set DeleteOnTermination on ENI ${eniId} (attachment ${attachmentId})`,
      'ModifyNetworkInterfaceAttribute',
      { NetworkInterfaceId: eniId, Attachment: { AttachmentId: attachmentId, DeleteOnTermination: true } },
      () => undefined,
    );
  }

  async detachEni(attachmentId: string): Promise<void> {
    await this.call(
      `detach ENI attachment ${attachmentId}`,
      'DetachNetworkInterface',
      { AttachmentId: attachmentId },
      () => undefined,
    );
  }

  async deleteEni(eniId: string): Promise<void> {
    await this.call(
      `delete ENI ${eniId}`,
      'DeleteNetworkInterface',
      { NetworkInterfaceId: eniId },
      () => undefined,
    );
  }

  /** Releases the EC2 client's sockets. */
  close(): void {
    this.ec2.close();
  }

  private async fetchLimits(instanceType: string): Promise<InstanceTypeLimits> {
    const doing = `describe instance type ${instanceType}`;
    const info = await this.call(doing, 'DescribeInstanceTypes', { InstanceType: [instanceType] }, (r) => {
      const found = r.items('instanceTypeSet').find((t) => t.string('instanceType') === instanceType);
      const network = found?.child('networkInfo');
      return found === undefined
        ? undefined
        : {
            maxEnis: network?.int('maximumNetworkInterfaces'),
            ipsPerEni: network?.int('ipv4AddressesPerInterface'),
          };
    });
    if (info === undefined) {
      throw new CloudError(`cannot ${doing}: EC2 does not know it`, 'InvalidInstanceType', false);
    }
    const { maxEnis, ipsPerEni } = info;
    if (maxEnis === undefined) throw invalidResponse(doing, 'NetworkInfo.MaximumNetworkInterfaces');
    if (ipsPerEni === undefined) throw invalidResponse(doing, 'NetworkInfo.Ipv4AddressesPerInterface');
    return { maxEnis, ipsPerEni };
  }

  private subnetCidr(subnetId: string): Promise<string> {
    return cached(this.subnetCidrCache, subnetId, async () => {
      const doing = `describe subnet ${subnetId}`;
      const cidr = await this.call(doing, 'DescribeSubnets', { SubnetId: [subnetId] }, (r) =>
        r
          .items('subnetSet')
          .find((s) => s.string('subnetId') === subnetId)
          ?.string('cidrBlock'),
      );
      if (cidr === undefined || !isCidr(cidr)) {
        throw invalidResponse(
          doing,
          `an IPv4 CIDR in Subnets[${subnetId}].CidrBlock (got ${JSON.stringify(cidr)})`,
        );
      }
      return cidr;
    });
  }

  /** AssignPrivateIpAddresses for `count` of one kind: secondary IPs or /28 prefixes. */
  private async assignToEni(eniId: string, count: number, kind: AssignedKind): Promise<string[]> {
    const doing = assignmentText(eniId, count, kind);
    const values = await this.call(
      doing,
      'AssignPrivateIpAddresses',
      assignmentParams(eniId, count, kind),
      (r) => r.items(kind.resultSet).map((a) => a.string(kind.resultField)),
    );
    return checkAssigned(doing, count, kind, values);
  }

  /**
   * Makes one EC2 call and reads its reply with `read` (where a field of the wrong shape throws);
   * every failure leaves as a CloudError saying what we were doing.
   */
  private async call<Out>(
    doing: string,
    action: string,
    params: QueryStruct,
    read: (reply: XmlElement) => Out,
  ): Promise<Out> {
    try {
      return read(await this.ec2.call(action, params));
    } catch (err) {
      throw toCloudError(doing, err);
    }
  }
}

/** CreateNetworkInterface's ConnectionTrackingSpecification, present only when there is one to send. */
function withConnectionTracking(timeouts: ConnectionTracking | undefined): QueryStruct {
  const spec = connectionTrackingParams(timeouts);
  return spec === undefined ? {} : { ConnectionTrackingSpecification: spec };
}

function cached<V>(cache: Map<string, Promise<V>>, key: string, load: () => Promise<V>): Promise<V> {
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  const loading = load();
  cache.set(key, loading);
  loading.catch(() => cache.delete(key));
  return loading;
}
