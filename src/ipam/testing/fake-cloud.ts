// An in-memory EC2 + IMDS for unit tests: one instance, one subnet, the instance type's ENI and
// address limits enforced with the EC2 error codes, and injectable failures per method.

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
} from '../../cloud/cloud.ts';
import {
  detachedEniOf,
  eniInfoOf,
  type FakeCloudMethod,
  type FakeCloudOptions,
  type FakeEni,
  fakeInstanceMetadata,
  instanceSubnet,
  withoutAssigned,
} from './fake-enis.ts';

export { CLOUD_METHODS, CLOUD_MUTATIONS, type FakeCloudMethod, type FakeCloudOptions } from './fake-enis.ts';

export class FakeCloud implements Cloud {
  readonly limits: InstanceTypeLimits;
  readonly meta: InstanceMetadata;
  readonly enis = new Map<string, FakeEni>();
  /** What describeSubnets knows: the instance's subnet first; tests add (and change) more. */
  readonly subnets: SubnetInfo[];
  /** Every call, as "method arg…", in order. */
  readonly calls: string[] = [];
  readonly #failures = new Map<FakeCloudMethod, Error[]>();
  #nextId = 1;
  #nextHost = 10;
  /** Prefixes come from 10.0.128.0 up, apart from the single addresses. */
  #nextPrefix = 0;
  readonly #ipv6Subnet: string | undefined;
  #nextIpv6Prefix = 1;

  constructor(options: FakeCloudOptions = {}) {
    this.limits = options.limits ?? { maxEnis: 3, ipsPerEni: 4 };
    const primaryIp = this.#allocateIp();
    this.meta = fakeInstanceMetadata(primaryIp, options.ipv6Subnet);
    this.#ipv6Subnet = options.ipv6Subnet;
    this.subnets = [instanceSubnet(this.meta)];
    const primary: FakeEni = {
      eniId: 'eni-primary',
      mac: this.meta.primaryMac,
      subnetId: this.meta.subnetId,
      primaryIp,
      description: 'primary',
      interfaceType: 'interface',
      tags: {},
      secondaryIps: Array.from({ length: options.primarySecondaryIps ?? 0 }, () => this.#allocateIp()),
      ipv4Prefixes: [],
      attachment: {
        attachmentId: 'attach-primary',
        instanceId: this.meta.instanceId,
        deviceIndex: 0,
        deleteOnTermination: true,
      },
    };
    this.enis.set(primary.eniId, primary);
  }

  /** The next `times` calls of `method` fail with `error` (default: a retryable throttle). */
  failNext(method: FakeCloudMethod, error?: Error, times = 1): void {
    const list = this.#failures.get(method) ?? [];
    for (let i = 0; i < times; i++) {
      list.push(error ?? new CloudError(`${method}: Request limit exceeded.`, 'RequestLimitExceeded', true));
    }
    this.#failures.set(method, list);
  }

  /** Drops every failure armed with failNext that has not fired yet. */
  clearFailures(): void {
    this.#failures.clear();
  }

  /** ENIs attached to the instance, by device index. */
  attached(): FakeEni[] {
    return [...this.enis.values()]
      .filter((e) => e.attachment?.instanceId === this.meta.instanceId)
      .sort((a, b) => (a.attachment?.deviceIndex ?? 0) - (b.attachment?.deviceIndex ?? 0));
  }

  #enter(method: FakeCloudMethod, ...args: unknown[]): void {
    this.calls.push([method, ...args.map((a) => (Array.isArray(a) ? a.join(',') : String(a)))].join(' '));
    const err = this.#failures.get(method)?.shift();
    if (err) throw err;
  }

  #allocateIp(): string {
    const n = this.#nextHost++;
    return `10.0.${Math.floor(n / 256)}.${n % 256}`;
  }

  #eni(eniId: string): FakeEni {
    const eni = this.enis.get(eniId);
    if (!eni)
      throw new CloudError(
        `The networkInterface ID '${eniId}' does not exist`,
        'InvalidNetworkInterfaceID.NotFound',
        false,
      );
    return eni;
  }

  async metadata(): Promise<InstanceMetadata> {
    this.#enter('metadata');
    return this.meta;
  }

  async vpcCidrs(primaryMac: string): Promise<string[]> {
    this.#enter('vpcCidrs', primaryMac);
    return [...this.meta.vpcCidrs];
  }

  async describeInstanceEnis(instanceId: string): Promise<EniInfo[]> {
    this.#enter('describeInstanceEnis', instanceId);
    return [...this.enis.values()]
      .filter((e) => e.attachment?.instanceId === instanceId)
      .map((e) => eniInfoOf(e, this.meta.subnetCidr));
  }

  async describeDetachedEnis(tagKey: string, tagValue: string): Promise<DetachedEni[]> {
    this.#enter('describeDetachedEnis', tagKey, tagValue);
    return [...this.enis.values()]
      .filter((e) => e.attachment === undefined && e.tags[tagKey] === tagValue)
      .map(detachedEniOf);
  }

  /** Branch ENIs on trunks, keyed by branch ENI ID (what the resource controller associated). */
  readonly trunkAssociations = new Map<string, TrunkAssociation>();

  async describeTrunkAssociations(trunkEniId: string): Promise<TrunkAssociation[]> {
    this.#enter('describeTrunkAssociations', trunkEniId);
    return [...this.trunkAssociations.values()].filter((a) => a.trunkEniId === trunkEniId);
  }

  async describeBranchEnis(eniIds: readonly string[]): Promise<BranchEniFacts[]> {
    this.#enter('describeBranchEnis', eniIds);
    return eniIds.flatMap((id) => {
      const e = this.enis.get(id);
      return e === undefined
        ? []
        : [
            {
              eniId: id,
              mac: e.mac,
              ip: e.primaryIp,
              subnetId: e.subnetId,
              subnetCidr: this.subnets.find((s) => s.subnetId === e.subnetId)?.cidr ?? this.meta.subnetCidr,
            },
          ];
    });
  }

  async instanceTypeLimits(instanceType: string): Promise<InstanceTypeLimits> {
    this.#enter('instanceTypeLimits', instanceType);
    return this.limits;
  }

  async assignPrivateIps(eniId: string, count: number): Promise<string[]> {
    this.#enter('assignPrivateIps', eniId, count);
    const eni = this.#eni(eniId);
    this.#checkSlots(eni, count);
    const ips = Array.from({ length: count }, () => this.#allocateIp());
    eni.secondaryIps.push(...ips);
    return ips;
  }

  /** What subnetCidrReservations answers per subnet (tests set them). */
  readonly cidrReservations = new Map<string, SubnetCidrReservation[]>();

  async subnetCidrReservations(subnetId: string): Promise<SubnetCidrReservation[]> {
    this.#enter('subnetCidrReservations', subnetId);
    return [...(this.cidrReservations.get(subnetId) ?? [])];
  }

  async describeSubnetAddressUse(subnetId: string): Promise<SubnetAddressUse> {
    this.#enter('describeSubnetAddressUse', subnetId);
    const enis = [...this.enis.values()].filter((e) => e.subnetId === subnetId);
    return {
      enis: enis.length,
      addresses: enis.flatMap((e) => [e.primaryIp, ...e.secondaryIps]),
      prefixes: enis.flatMap((e) => e.ipv4Prefixes),
    };
  }

  /** As EC2: all or nothing; an address some ENI holds is InvalidParameterValue. */
  async assignNamedPrivateIps(eniId: string, ips: readonly string[]): Promise<string[]> {
    this.#enter('assignNamedPrivateIps', eniId, ips);
    const eni = this.#eni(eniId);
    this.#checkSlots(eni, ips.length);
    const held = new Set([...this.enis.values()].flatMap((e) => [e.primaryIp, ...e.secondaryIps]));
    const taken = ips.find((ip) => held.has(ip));
    if (taken !== undefined) {
      throw new CloudError(
        `Address ${taken} is in subnet's reserved address range or already in use`,
        'InvalidParameterValue',
        false,
      );
    }
    eni.secondaryIps.push(...ips);
    return [...ips];
  }

  async unassignPrivateIps(eniId: string, ips: readonly string[]): Promise<void> {
    this.#enter('unassignPrivateIps', eniId, ips);
    const eni = this.#eni(eniId);
    eni.secondaryIps = withoutAssigned(eni.secondaryIps, ips, 'IPs', eniId);
  }

  async describeSubnets(query: SubnetQuery): Promise<SubnetInfo[]> {
    this.#enter('describeSubnets', JSON.stringify(query));
    if ('subnetIds' in query) {
      return query.subnetIds.map((id) => {
        const found = this.subnets.find((s) => s.subnetId === id);
        if (!found)
          throw new CloudError(`The subnet ID '${id}' does not exist`, 'InvalidSubnetID.NotFound', false);
        return found;
      });
    }
    return this.subnets.filter(
      (s) =>
        s.availabilityZone === query.availabilityZone &&
        (query.vpcId === undefined || s.vpcId === query.vpcId),
    );
  }

  async assignIpv4Prefixes(eniId: string, count: number): Promise<string[]> {
    this.#enter('assignIpv4Prefixes', eniId, count);
    const eni = this.#eni(eniId);
    this.#checkSlots(eni, count);
    const prefixes = Array.from({ length: count }, () => {
      const n = this.#nextPrefix++;
      return `10.0.${128 + Math.floor(n / 16)}.${(n % 16) * 16}/28`;
    });
    eni.ipv4Prefixes.push(...prefixes);
    return prefixes;
  }

  /** As EC2: all or nothing; a /28 any of whose addresses some ENI holds is InvalidParameterValue. */
  async assignNamedIpv4Prefixes(eniId: string, prefixes: readonly string[]): Promise<string[]> {
    this.#enter('assignNamedIpv4Prefixes', eniId, prefixes);
    const eni = this.#eni(eniId);
    this.#checkSlots(eni, prefixes.length);
    const held = new Set(
      [...this.enis.values()].flatMap((e) => [e.primaryIp, ...e.secondaryIps, ...e.ipv4Prefixes]),
    );
    const taken = prefixes.find((p) => held.has(p));
    if (taken !== undefined) {
      throw new CloudError(
        `Address ${taken.split('/')[0]} is in subnet's reserved address range or already in use`,
        'InvalidParameterValue',
        false,
      );
    }
    eni.ipv4Prefixes.push(...prefixes);
    return [...prefixes];
  }

  async unassignIpv4Prefixes(eniId: string, prefixes: readonly string[]): Promise<void> {
    this.#enter('unassignIpv4Prefixes', eniId, prefixes);
    const eni = this.#eni(eniId);
    eni.ipv4Prefixes = withoutAssigned(eni.ipv4Prefixes, prefixes, 'prefixes', eniId);
  }

  async assignIpv6Prefixes(eniId: string, count: number): Promise<string[]> {
    this.#enter('assignIpv6Prefixes', eniId, count);
    const eni = this.#eni(eniId);
    if (this.#ipv6Subnet === undefined) {
      throw new CloudError(`The subnet of ${eniId} has no IPv6 CIDR block`, 'InvalidParameterValue', false);
    }
    const prefixes = Array.from(
      { length: count },
      () => `${this.#ipv6Subnet}:${(this.#nextIpv6Prefix++).toString(16)}::/80`,
    );
    eni.ipv6Prefixes = [...(eni.ipv6Prefixes ?? []), ...prefixes];
    return prefixes;
  }

  async unassignIpv6Prefixes(eniId: string, prefixes: readonly string[]): Promise<void> {
    this.#enter('unassignIpv6Prefixes', eniId, prefixes);
    const eni = this.#eni(eniId);
    eni.ipv6Prefixes = withoutAssigned(eni.ipv6Prefixes ?? [], prefixes, 'IPv6 prefixes', eniId);
  }

  /** Each secondary IP and each prefix takes one of the ENI's slots beside the primary. */
  #checkSlots(eni: FakeEni, more: number): void {
    if (eni.secondaryIps.length + eni.ipv4Prefixes.length + more > this.limits.ipsPerEni - 1) {
      throw new CloudError(
        `Number of private addresses will exceed limit on ${eni.eniId}`,
        'PrivateIpAddressLimitExceeded',
        false,
      );
    }
  }

  async createEni(
    subnetId: string,
    securityGroupIds: readonly string[],
    description: string,
    tags: Readonly<Record<string, string>> = {},
    _clientToken?: string,
    _connectionTracking?: unknown,
    primaryIp?: string,
  ): Promise<CreatedEni> {
    const shownTags = Object.entries(tags).map(([k, v]) => `${k}=${v}`);
    this.#enter(
      'createEni',
      subnetId,
      securityGroupIds,
      description,
      ...shownTags,
      ...(primaryIp === undefined ? [] : [`at ${primaryIp}`]),
    );
    if (
      primaryIp !== undefined &&
      [...this.enis.values()].some((e) => e.primaryIp === primaryIp || e.secondaryIps.includes(primaryIp))
    ) {
      throw new CloudError('The specified IP address is already in use', 'InvalidIPAddress.InUse', false);
    }
    const eni = this.#newEni(subnetId, description, 'interface', tags, primaryIp);
    return { eniId: eni.eniId, mac: eni.mac, primaryIp: eni.primaryIp };
  }

  /**
   * Test set-up, not a Cloud call (not in `calls`, never failing): an ENI someone else created,
   * attached at `deviceIndex` with `secondaryIps` addresses (e.g. a trunk the resource controller
   * attached, or one tagged no_manage).
   */
  attachForeignEni(options: {
    readonly deviceIndex: number;
    readonly interfaceType?: string;
    readonly tags?: Readonly<Record<string, string>>;
    readonly description?: string;
    readonly secondaryIps?: number;
  }): string {
    const eni = this.#newEni(
      this.meta.subnetId,
      options.description ?? 'foreign',
      options.interfaceType ?? 'interface',
      options.tags ?? {},
    );
    eni.secondaryIps = Array.from({ length: options.secondaryIps ?? 0 }, () => this.#allocateIp());
    eni.attachment = {
      attachmentId: `attach-${eni.eniId}`,
      instanceId: this.meta.instanceId,
      deviceIndex: options.deviceIndex,
      deleteOnTermination: false,
    };
    return eni.eniId;
  }

  #newEni(
    subnetId: string,
    description: string,
    interfaceType: string,
    tags: Readonly<Record<string, string>>,
    primaryIp?: string,
  ): FakeEni {
    const n = this.#nextId++;
    const eni: FakeEni = {
      eniId: `eni-${n.toString(16).padStart(4, '0')}`,
      mac: `02:00:00:00:01:${n.toString(16).padStart(2, '0')}`,
      subnetId,
      primaryIp: primaryIp ?? this.#allocateIp(),
      description,
      interfaceType,
      tags: { ...tags },
      secondaryIps: [],
      ipv4Prefixes: [],
    };
    this.enis.set(eni.eniId, eni);
    return eni;
  }

  async attachEni(eniId: string, instanceId: string, deviceIndex: number): Promise<string> {
    this.#enter('attachEni', eniId, instanceId, deviceIndex);
    const eni = this.#eni(eniId);
    const attached = this.attached();
    if (attached.length >= this.limits.maxEnis) {
      throw new CloudError(
        `Interface count ${attached.length + 1} exceeds the limit for ${this.meta.instanceType}`,
        'AttachmentLimitExceeded',
        false,
      );
    }
    if (attached.some((e) => e.attachment?.deviceIndex === deviceIndex)) {
      throw new CloudError(
        `Instance ${instanceId} already has an interface attached at device index ${deviceIndex}`,
        'InvalidParameterValue',
        false,
      );
    }
    const attachmentId = `attach-${eniId}`;
    eni.attachment = { attachmentId, instanceId, deviceIndex, deleteOnTermination: false };
    return attachmentId;
  }

  async setDeleteOnTermination(eniId: string, attachmentId: string): Promise<void> {
    this.#enter('setDeleteOnTermination', eniId, attachmentId);
    const eni = this.#eni(eniId);
    if (eni.attachment?.attachmentId !== attachmentId) {
      throw new CloudError(
        `Attachment ${attachmentId} is not on ${eniId}`,
        'InvalidAttachmentID.NotFound',
        false,
      );
    }
    eni.attachment.deleteOnTermination = true;
  }

  async detachEni(attachmentId: string): Promise<void> {
    this.#enter('detachEni', attachmentId);
    const eni = [...this.enis.values()].find((e) => e.attachment?.attachmentId === attachmentId);
    if (!eni)
      throw new CloudError(`Attachment ${attachmentId} not found`, 'InvalidAttachmentID.NotFound', false);
    delete eni.attachment;
  }

  async deleteEni(eniId: string): Promise<void> {
    this.#enter('deleteEni', eniId);
    const eni = this.#eni(eniId);
    if (eni.attachment)
      throw new CloudError(
        `Network interface ${eniId} is currently in use`,
        'InvalidNetworkInterface.InUse',
        false,
      );
    this.enis.delete(eniId);
  }
}
