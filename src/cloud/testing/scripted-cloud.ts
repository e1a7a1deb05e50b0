// Test support: a Cloud whose EC2 answers a test scripts, one per attempt (a CloudError to throw,
// or nothing for the method's usual answer), and that records every call with its arguments.
import type {
  BranchEniFacts,
  Cloud,
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
} from '../cloud.ts';

export interface ScriptedCall {
  readonly method: keyof Cloud;
  readonly args: readonly unknown[];
}

export class ScriptedCloud implements Cloud {
  readonly calls: ScriptedCall[] = [];
  /** Failures to answer with, in order, before answering normally. */
  readonly failures: Error[] = [];

  #answer<T>(method: keyof Cloud, args: unknown[], ok: T): Promise<T> {
    this.calls.push({ method, args });
    const failure = this.failures.shift();
    return failure === undefined ? Promise.resolve(ok) : Promise.reject(failure);
  }

  callsOf(method: keyof Cloud): ScriptedCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  metadata(): Promise<InstanceMetadata> {
    return this.#answer('metadata', [], {
      instanceId: 'i-0test',
      instanceType: 'm5.large',
      region: 'us-west-2',
      availabilityZone: 'us-west-2a',
      primaryMac: '02:00:00:00:00:01',
      primaryIp: '10.0.0.10',
      subnetId: 'subnet-0a',
      subnetCidr: '10.0.0.0/24',
      vpcId: 'vpc-0test',
      vpcCidrs: ['10.0.0.0/16'],
      securityGroupIds: ['sg-0a'],
    });
  }
  vpcCidrs(primaryMac: string): Promise<string[]> {
    return this.#answer('vpcCidrs', [primaryMac], ['10.0.0.0/16']);
  }
  describeInstanceEnis(instanceId: string): Promise<EniInfo[]> {
    return this.#answer('describeInstanceEnis', [instanceId], []);
  }
  describeDetachedEnis(tagKey: string, tagValue: string): Promise<DetachedEni[]> {
    return this.#answer('describeDetachedEnis', [tagKey, tagValue], []);
  }
  describeSubnets(query: SubnetQuery): Promise<SubnetInfo[]> {
    return this.#answer('describeSubnets', [query], []);
  }
  describeTrunkAssociations(trunkEniId: string): Promise<TrunkAssociation[]> {
    return this.#answer('describeTrunkAssociations', [trunkEniId], []);
  }
  describeBranchEnis(eniIds: readonly string[]): Promise<BranchEniFacts[]> {
    return this.#answer('describeBranchEnis', [eniIds], []);
  }
  subnetCidrReservations(subnetId: string): Promise<SubnetCidrReservation[]> {
    return this.#answer('subnetCidrReservations', [subnetId], []);
  }
  describeSubnetAddressUse(subnetId: string): Promise<SubnetAddressUse> {
    return this.#answer('describeSubnetAddressUse', [subnetId], { enis: 0, addresses: [], prefixes: [] });
  }
  assignNamedPrivateIps(eniId: string, ips: readonly string[]): Promise<string[]> {
    return this.#answer('assignNamedPrivateIps', [eniId, ips], [...ips]);
  }
  instanceTypeLimits(instanceType: string): Promise<InstanceTypeLimits> {
    return this.#answer('instanceTypeLimits', [instanceType], { maxEnis: 3, ipsPerEni: 10 });
  }
  assignPrivateIps(eniId: string, count: number): Promise<string[]> {
    const ips = Array.from({ length: count }, (_, i) => `10.0.0.${100 + i}`);
    return this.#answer('assignPrivateIps', [eniId, count], ips);
  }
  unassignPrivateIps(eniId: string, ips: readonly string[]): Promise<void> {
    return this.#answer('unassignPrivateIps', [eniId, ips], undefined);
  }
  assignIpv4Prefixes(eniId: string, count: number): Promise<string[]> {
    const prefixes = Array.from({ length: count }, (_, i) => `10.0.0.${16 * (i + 1)}/28`);
    return this.#answer('assignIpv4Prefixes', [eniId, count], prefixes);
  }
  assignNamedIpv4Prefixes(eniId: string, prefixes: readonly string[]): Promise<string[]> {
    return this.#answer('assignNamedIpv4Prefixes', [eniId, prefixes], [...prefixes]);
  }
  unassignIpv4Prefixes(eniId: string, prefixes: readonly string[]): Promise<void> {
    return this.#answer('unassignIpv4Prefixes', [eniId, prefixes], undefined);
  }
  assignIpv6Prefixes(eniId: string, count: number): Promise<string[]> {
    const prefixes = Array.from({ length: count }, (_, i) => `2001:db8:5e00:0:${i + 1}::/80`);
    return this.#answer('assignIpv6Prefixes', [eniId, count], prefixes);
  }
  unassignIpv6Prefixes(eniId: string, prefixes: readonly string[]): Promise<void> {
    return this.#answer('unassignIpv6Prefixes', [eniId, prefixes], undefined);
  }
  createEni(
    subnetId: string,
    securityGroupIds: readonly string[],
    description: string,
    tags?: Readonly<Record<string, string>>,
    clientToken?: string,
  ): Promise<CreatedEni> {
    return this.#answer('createEni', [subnetId, securityGroupIds, description, tags, clientToken], {
      eniId: 'eni-0new',
      mac: '02:00:00:00:00:02',
      primaryIp: '10.0.0.20',
    });
  }
  attachEni(eniId: string, instanceId: string, deviceIndex: number): Promise<string> {
    return this.#answer('attachEni', [eniId, instanceId, deviceIndex], 'eni-attach-0new');
  }
  setDeleteOnTermination(eniId: string, attachmentId: string): Promise<void> {
    return this.#answer('setDeleteOnTermination', [eniId, attachmentId], undefined);
  }
  detachEni(attachmentId: string): Promise<void> {
    return this.#answer('detachEni', [attachmentId], undefined);
  }
  deleteEni(eniId: string): Promise<void> {
    return this.#answer('deleteEni', [eniId], undefined);
  }
}
