// The emulated VPC in memory: subnets, instances, ENIs and their addresses. Every method is
// synchronous and all-or-nothing: it either changes the state or throws an Ec2Error and
// leaves it untouched. Kernel side effects (the fabric) live in operations.ts.
import { cidrsOverlap, formatCidr, isCidr, parseCidr } from '../../infra/ipv4.ts';
import type { SubnetSpec, VpcSpec } from '../api.ts';
import { Ec2Error, invalidParameter, notFound } from '../ec2/error.ts';
import type { ConnectionTrackingTimeouts } from './connection-tracking.ts';
import { giveIpv6Back, type Ipv6Assigned, type Ipv6AssignRequest, takeIpv6 } from './eni-ipv6.ts';
import { givePrefixesBack, takePrefixes } from './eni-prefixes.ts';
import { giveSecondaryIpsBack, takeSecondaryIps } from './eni-secondary-ips.ts';
import type { IdSource } from './ids.ts';
import { networkLimits } from './instance-types.ts';
import { MetadataOptionsStore } from './metadata-options.ts';
import { DEFAULT_SECURITY_GROUP, SecurityGroups } from './security-groups.ts';
import { addSubnetPool, subnetPools } from './spec.ts';
import { prefixAddresses, type SubnetPool } from './subnet-pool.ts';
import type { CidrReservation } from './subnet-reservations.ts';
import { checkTrunkAssociation } from './trunk-rules.ts';
import {
  type Eni,
  type EniAttachment,
  type Instance,
  type InterfaceType,
  type TrunkAssociation,
  VpcView,
} from './view.ts';

export type { Eni, EniAttachment, Instance, InterfaceType, TrunkAssociation } from './view.ts';

export interface CreateEniRequest {
  readonly subnetId: string;
  readonly description?: string;
  readonly securityGroupIds?: readonly string[];
  readonly tags?: ReadonlyMap<string, string>;
  readonly primaryIp?: string;
  readonly interfaceType?: InterfaceType;
  readonly connectionTracking?: ConnectionTrackingTimeouts;
}

export interface LaunchRequest {
  readonly instanceType: string;
  readonly subnetId: string;
  readonly securityGroupIds?: readonly string[];
  readonly netns?: string;
  readonly nodeName?: string;
  /** The primary ENI's connection-tracking timeouts (a launch template's). */
  readonly connectionTracking?: ConnectionTrackingTimeouts;
  /** LaunchInstanceRequest.imdsSourceAddress. */
  readonly imdsSourceAddress?: string;
}

export type AssignRequest = { readonly count: number } | { readonly ips: readonly string[] };

export { DEFAULT_SECURITY_GROUP } from './security-groups.ts';

export class VpcState extends VpcView {
  readonly #ids: IdSource;
  readonly #now: () => Date;
  /** Called after every change (the stale-read history records a snapshot). */
  onChange: (() => void) | undefined;
  /** What exists of the VPC's security groups (DescribeSecurityGroups), read live. */
  readonly securityGroups: SecurityGroups;
  /** Each instance's metadata options (IMDS and DescribeInstances), read live. */
  readonly metadataOptions = new MetadataOptionsStore();

  constructor(spec: VpcSpec, ids: IdSource, now: () => Date = () => new Date()) {
    super(spec, subnetPools(spec));
    this.#ids = ids;
    this.#now = now;
    this.securityGroups = new SecurityGroups(spec);
  }

  /** A subnet created after start (the lab's extra subnets); the checks of the VPC's own. */
  addSubnet(spec: SubnetSpec): SubnetPool {
    const pool = addSubnetPool(this.subnetsById, this.spec, spec);
    this.onChange?.();
    return pool;
  }

  /** CreateSubnetCidrReservation: the checks of subnet-reservations.ts, an ID as EC2 gives it. */
  reserveCidr(subnetId: string, cidr: string, type: string, description = ''): CidrReservation {
    const reservation = this.subnet(subnetId).reservations.add(
      this.#ids.unique('scr-'),
      cidr,
      type,
      description,
    );
    this.onChange?.();
    return reservation;
  }

  /** DeleteSubnetCidrReservation; an unknown ID is EC2's NotFound. */
  deleteCidrReservation(reservationId: string): CidrReservation {
    for (const pool of this.subnets()) {
      const gone = pool.reservations.remove(reservationId);
      if (gone !== undefined) {
        this.onChange?.();
        return gone;
      }
    }
    throw notFound('SubnetCidrReservationID', reservationId);
  }

  /** Associates another IPv4 CIDR block with the VPC (the lab's stand-in for AssociateVpcCidrBlock). */
  associateCidr(text: string): string {
    if (!isCidr(text)) throw invalidParameter(`not an IPv4 CIDR: ${JSON.stringify(text)}`);
    const cidr = parseCidr(text);
    for (const other of this.vpcCidrs()) {
      if (cidrsOverlap(parseCidr(other), cidr)) {
        throw invalidParameter(`${text} overlaps the VPC's CIDR block ${other}`);
      }
    }
    const written = formatCidr(cidr);
    this.associatedCidrs.push(written);
    this.onChange?.();
    return written;
  }

  createEni(req: CreateEniRequest): Eni {
    const pool = this.subnet(req.subnetId);
    let primaryIp: string;
    if (req.primaryIp !== undefined) {
      pool.claim([req.primaryIp]);
      primaryIp = req.primaryIp;
    } else {
      [primaryIp] = pool.allocate(1) as [string];
    }
    const groups = req.securityGroupIds ?? [];
    const eni: Eni = {
      eniId: this.#ids.unique('eni-'),
      mac: this.#ids.mac(),
      subnetId: req.subnetId,
      primaryIp,
      secondaryIps: [],
      ipv4Prefixes: [],
      ipv6Addresses: [],
      ipv6Prefixes: [],
      securityGroupIds: groups.length > 0 ? [...groups] : [DEFAULT_SECURITY_GROUP],
      description: req.description ?? '',
      tags: new Map(req.tags ?? []),
      attachment: undefined,
      interfaceType: req.interfaceType ?? 'interface',
      trunkAssociation: undefined,
      connectionTracking: req.connectionTracking,
    };
    this.enisById.set(eni.eniId, eni);
    this.onChange?.();
    return eni;
  }

  deleteEni(eniId: string): Eni {
    const eni = this.eni(eniId);
    if (
      eni.attachment !== undefined ||
      eni.trunkAssociation !== undefined ||
      this.branchesOf(eniId).length > 0
    ) {
      throw invalidParameter(`Network interface '${eniId}' is currently in use.`);
    }
    const pool = this.subnet(eni.subnetId);
    pool.release([eni.primaryIp, ...eni.secondaryIps]);
    for (const prefix of eni.ipv4Prefixes) pool.releasePrefix(prefix);
    this.enisById.delete(eniId);
    this.onChange?.();
    return eni;
  }

  /** Put a deleted ENI back exactly as it was (rollback). */
  restoreEni(eni: Eni): void {
    const pool = this.subnet(eni.subnetId);
    pool.claim([eni.primaryIp, ...eni.secondaryIps, ...eni.ipv4Prefixes.flatMap(prefixAddresses)]);
    this.enisById.set(eni.eniId, eni);
    this.onChange?.();
  }

  attach(eniId: string, instanceId: string, deviceIndex: number, deleteOnTermination = false): EniAttachment {
    const eni = this.eni(eniId);
    const instance = this.instance(instanceId);
    if (!Number.isInteger(deviceIndex) || deviceIndex < 0) {
      throw invalidParameter(`Invalid value '${deviceIndex}' for deviceIndex`);
    }
    if (eni.attachment !== undefined) {
      throw new Ec2Error(
        'InvalidParameterValue',
        `Network interface '${eniId}' is currently in use by ${eni.attachment.instanceId}.`,
      );
    }
    if (eni.trunkAssociation !== undefined) {
      throw invalidParameter(
        `Network interface '${eniId}' is a branch of ${eni.trunkAssociation.trunkEniId}.`,
      );
    }
    if (eni.interfaceType === 'trunk' && instance.limits.maxBranchEnis === 0) {
      throw new Ec2Error(
        'UnsupportedOperation',
        `Instance type ${instance.instanceType} of '${instanceId}' does not support trunk network interfaces.`,
      );
    }
    const attached = this.enisOf(instanceId);
    if (attached.length >= instance.limits.maxEnis || deviceIndex >= instance.limits.maxEnis) {
      throw new Ec2Error(
        'AttachmentLimitExceeded',
        `Interface count ${attached.length + 1} exceeds the limit for ${instance.instanceType}`,
      );
    }
    if (attached.some((e) => e.attachment?.deviceIndex === deviceIndex)) {
      throw invalidParameter(
        `Instance '${instanceId}' already has an interface attached at device index '${deviceIndex}'.`,
      );
    }
    const eniAz = this.subnet(eni.subnetId).spec.availabilityZone;
    const instanceAz = this.subnet(instance.subnetId).spec.availabilityZone;
    if (eniAz !== instanceAz) {
      throw invalidParameter(
        `Network interface '${eniId}' is in ${eniAz}; instance '${instanceId}' is in ${instanceAz}.`,
      );
    }
    const eniAttachment: EniAttachment = {
      attachmentId: this.#ids.unique('eni-attach-'),
      instanceId,
      deviceIndex,
      attachTime: this.#now(),
      deleteOnTermination,
    };
    eni.attachment = eniAttachment;
    this.onChange?.();
    return eniAttachment;
  }

  detach(attachmentId: string): { eni: Eni; eniAttachment: EniAttachment } {
    const eni = this.eniByAttachmentId(attachmentId);
    const eniAttachment = eni.attachment!;
    if (eniAttachment.deviceIndex === 0) {
      throw new Ec2Error(
        'OperationNotPermitted',
        `The network interface at device index 0 and networkCard index 0 cannot be detached.`,
      );
    }
    eni.attachment = undefined;
    this.onChange?.();
    return { eni, eniAttachment };
  }

  /** Re-attach with the same attachment (rollback of a detach). */
  restoreEniAttachment(eni: Eni, eniAttachment: EniAttachment): void {
    eni.attachment = eniAttachment;
    this.onChange?.();
  }

  /** AssignPrivateIpAddresses with SecondaryPrivateIpAddressCount (or PrivateIpAddress.N). */
  assign(eniId: string, req: AssignRequest): string[] {
    const eni = this.eni(eniId);
    const ips = takeSecondaryIps(eni, this.subnet(eni.subnetId), req, this.#slotLimit(eni));
    this.onChange?.();
    return ips;
  }

  /** The ENI's address slots while it is attached (its instance type's); none while detached. */
  #slotLimit(eni: Eni): number | undefined {
    return eni.attachment ? this.instance(eni.attachment.instanceId).limits.ipsPerEni : undefined;
  }

  /** AssignPrivateIpAddresses with Ipv4PrefixCount (or Ipv4Prefix.N on rollback). */
  assignPrefixes(eniId: string, req: AssignRequest): string[] {
    const eni = this.eni(eniId);
    const prefixes = takePrefixes(eni, this.subnet(eni.subnetId), req, this.#slotLimit(eni));
    this.onChange?.();
    return prefixes;
  }

  unassignPrefixes(eniId: string, prefixes: readonly string[]): void {
    const eni = this.eni(eniId);
    givePrefixesBack(eni, this.subnet(eni.subnetId), prefixes);
    this.onChange?.();
  }

  /** AssignIpv6Addresses: single addresses or /80 prefixes (eni-ipv6.ts). */
  assignIpv6(eniId: string, req: Ipv6AssignRequest): Ipv6Assigned {
    const assigned = takeIpv6(this, this.eni(eniId), req);
    this.onChange?.();
    return assigned;
  }

  unassignIpv6(eniId: string, gone: { addresses: readonly string[]; prefixes: readonly string[] }): void {
    giveIpv6Back(this.eni(eniId), gone);
    this.onChange?.();
  }

  unassign(eniId: string, ips: readonly string[]): void {
    const eni = this.eni(eniId);
    giveSecondaryIpsBack(eni, this.subnet(eni.subnetId), ips);
    this.onChange?.();
  }

  launch(req: LaunchRequest): { instance: Instance; primaryEni: Eni } {
    const limits = networkLimits(req.instanceType);
    if (limits === undefined) throw invalidParameter(`Unknown instance type ${req.instanceType}`);
    this.subnet(req.subnetId);
    const groups = req.securityGroupIds ?? [];
    const instance: Instance = {
      instanceId: this.#ids.unique('i-'),
      instanceType: req.instanceType,
      limits,
      subnetId: req.subnetId,
      securityGroupIds: groups.length > 0 ? [...groups] : [DEFAULT_SECURITY_GROUP],
      netns: req.netns,
      nodeName: req.nodeName,
      launchTime: this.#now(),
      tags: new Map(),
      ...(req.imdsSourceAddress === undefined ? {} : { imdsSourceAddress: req.imdsSourceAddress }),
    };
    const primaryEni = this.createEni({
      subnetId: req.subnetId,
      securityGroupIds: instance.securityGroupIds,
      description: `Primary network interface of ${instance.instanceId}`,
      ...(req.connectionTracking === undefined ? {} : { connectionTracking: req.connectionTracking }),
    });
    // A dual-stack subnet gives the primary ENI its primary IPv6 (AssignIpv6AddressOnCreation).
    if (this.subnet(req.subnetId).spec.ipv6Cidr !== undefined)
      takeIpv6(this, primaryEni, { addressCount: 1 });
    this.instancesById.set(instance.instanceId, instance);
    this.attach(primaryEni.eniId, instance.instanceId, 0, true);
    return { instance, primaryEni };
  }

  /** Forget the instance; its ENIs must already be detached or deleted. */
  removeInstance(instanceId: string): Instance {
    const instance = this.instance(instanceId);
    this.instancesById.delete(instanceId);
    this.onChange?.();
    return instance;
  }

  /** Detach unconditionally, the primary ENI included (instance termination). */
  forceDetach(eni: Eni): EniAttachment | undefined {
    const a = eni.attachment;
    eni.attachment = undefined;
    this.onChange?.();
    return a;
  }

  createTags(resourceIds: readonly string[], tags: ReadonlyMap<string, string>): void {
    const targets = resourceIds.map((id) => this.#tagsOf(id));
    for (const t of targets) for (const [k, v] of tags) t.set(k, v);
    this.onChange?.();
  }

  /**
   * DeleteTags: each key goes; with a value (not undefined), only where the tag has that value, as
   * EC2 does. All resources are checked before any tag goes.
   */
  deleteTags(resourceIds: readonly string[], tags: ReadonlyMap<string, string | undefined>): void {
    const targets = resourceIds.map((id) => this.#tagsOf(id));
    for (const t of targets) {
      for (const [k, v] of tags) if (v === undefined || t.get(k) === v) t.delete(k);
    }
    this.onChange?.();
  }

  #tagsOf(resourceId: string): Map<string, string> {
    if (resourceId.startsWith('i-')) return this.instance(resourceId).tags;
    if (resourceId.startsWith('eni-')) return this.eni(resourceId).tags;
    if (resourceId.startsWith('subnet-')) return this.subnet(resourceId).tags;
    throw new Ec2Error('InvalidID', `The ID '${resourceId}' is not valid`);
  }

  setDeleteOnTermination(eniId: string, attachmentId: string, value: boolean): void {
    const eni = this.eni(eniId);
    const attached = this.eniByAttachmentId(attachmentId);
    if (attached !== eni || eni.attachment === undefined) {
      throw invalidParameter(`Attachment '${attachmentId}' does not belong to ${eniId}`);
    }
    eni.attachment.deleteOnTermination = value;
    this.onChange?.();
  }

  modifyEni(eniId: string, change: { description?: string; securityGroupIds?: readonly string[] }): void {
    const eni = this.eni(eniId);
    if (change.description !== undefined) eni.description = change.description;
    if (change.securityGroupIds !== undefined && change.securityGroupIds.length > 0) {
      eni.securityGroupIds = [...change.securityGroupIds];
    }
    this.onChange?.();
  }

  /** AssociateTrunkInterface: the branch ENI gets a VLAN on the trunk ENI. */
  associateTrunk(branchEniId: string, trunkEniId: string, vlanId: number): TrunkAssociation {
    const branch = this.eni(branchEniId);
    checkTrunkAssociation(this, branch, this.eni(trunkEniId), vlanId);
    const association: TrunkAssociation = {
      associationId: this.#ids.unique('trunk-assoc-'),
      trunkEniId,
      vlanId,
    };
    branch.trunkAssociation = association;
    this.onChange?.();
    return association;
  }

  disassociateTrunk(associationId: string): { branch: Eni; association: TrunkAssociation } {
    const branch = this.eniByAssociation(associationId);
    const association = branch.trunkAssociation!;
    branch.trunkAssociation = undefined;
    this.onChange?.();
    return { branch, association };
  }

  /** Re-associate exactly as before (rollback of a disassociate). */
  restoreTrunkAssociation(branch: Eni, association: TrunkAssociation): void {
    branch.trunkAssociation = association;
    this.onChange?.();
  }
}
