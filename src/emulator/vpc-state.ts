// The emulated VPC in memory: subnets, instances, ENIs and their addresses. Every method is
// synchronous and all-or-nothing: it either changes the state or throws an Ec2Error and
// leaves it untouched. Kernel side effects (the fabric) live in vpc-operations.ts.
import type { VpcSpec } from './api.ts';
import { Ec2Error, invalidParameter, notFound } from './ec2-error.ts';
import type { IdSource } from './ids.ts';
import { type NetworkLimits, networkLimits } from './instance-types.ts';
import { SubnetPool } from './subnet-pool.ts';

export interface Attachment {
  readonly attachmentId: string;
  readonly instanceId: string;
  readonly deviceIndex: number;
  readonly attachTime: Date;
  deleteOnTermination: boolean;
}

export interface Eni {
  readonly eniId: string;
  readonly mac: string;
  readonly subnetId: string;
  readonly primaryIp: string;
  readonly secondaryIps: string[];
  readonly securityGroupIds: readonly string[];
  readonly description: string;
  readonly tags: Map<string, string>;
  attachment: Attachment | undefined;
}

export interface Instance {
  readonly instanceId: string;
  readonly instanceType: string;
  readonly limits: NetworkLimits;
  readonly subnetId: string;
  readonly securityGroupIds: readonly string[];
  readonly netns: string | undefined;
  readonly nodeName: string | undefined;
  readonly launchTime: Date;
  readonly tags: Map<string, string>;
}

export interface CreateEniRequest {
  readonly subnetId: string;
  readonly description?: string;
  readonly securityGroupIds?: readonly string[];
  readonly tags?: ReadonlyMap<string, string>;
  readonly primaryIp?: string;
}

export interface LaunchRequest {
  readonly instanceType: string;
  readonly subnetId: string;
  readonly securityGroupIds?: readonly string[];
  readonly netns?: string;
  readonly nodeName?: string;
}

export type AssignRequest = { readonly count: number } | { readonly ips: readonly string[] };

export const DEFAULT_SECURITY_GROUP = 'sg-00000000000000001';

export class VpcState {
  readonly spec: VpcSpec;
  readonly #ids: IdSource;
  readonly #now: () => Date;
  readonly #subnets = new Map<string, SubnetPool>();
  readonly #instances = new Map<string, Instance>();
  readonly #enis = new Map<string, Eni>();

  constructor(spec: VpcSpec, ids: IdSource, now: () => Date = () => new Date()) {
    this.spec = spec;
    this.#ids = ids;
    this.#now = now;
    for (const s of spec.subnets) this.#subnets.set(s.subnetId, new SubnetPool(s));
  }

  subnets(): SubnetPool[] {
    return [...this.#subnets.values()];
  }

  subnet(subnetId: string): SubnetPool {
    const s = this.#subnets.get(subnetId);
    if (s === undefined) throw notFound('SubnetID', subnetId);
    return s;
  }

  instances(): Instance[] {
    return [...this.#instances.values()];
  }

  instance(instanceId: string): Instance {
    const i = this.#instances.get(instanceId);
    if (i === undefined) throw notFound('InstanceID', instanceId);
    return i;
  }

  enis(): Eni[] {
    return [...this.#enis.values()];
  }

  eni(eniId: string): Eni {
    const e = this.#enis.get(eniId);
    if (e === undefined) throw notFound('NetworkInterfaceID', eniId);
    return e;
  }

  eniByAttachment(attachmentId: string): Eni {
    for (const e of this.#enis.values()) if (e.attachment?.attachmentId === attachmentId) return e;
    throw notFound('AttachmentID', attachmentId);
  }

  /** ENIs attached to the instance, by device index. */
  enisOf(instanceId: string): Eni[] {
    return this.enis()
      .filter((e) => e.attachment?.instanceId === instanceId)
      .sort((a, b) => (a.attachment?.deviceIndex ?? 0) - (b.attachment?.deviceIndex ?? 0));
  }

  /** The instance whose ENIs hold this address (primary or secondary). */
  instanceByAddress(ip: string): Instance | undefined {
    for (const e of this.#enis.values()) {
      if (e.attachment !== undefined && (e.primaryIp === ip || e.secondaryIps.includes(ip))) {
        return this.#instances.get(e.attachment.instanceId);
      }
    }
    return undefined;
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
      securityGroupIds: groups.length > 0 ? [...groups] : [DEFAULT_SECURITY_GROUP],
      description: req.description ?? '',
      tags: new Map(req.tags ?? []),
      attachment: undefined,
    };
    this.#enis.set(eni.eniId, eni);
    return eni;
  }

  deleteEni(eniId: string): Eni {
    const eni = this.eni(eniId);
    if (eni.attachment !== undefined) {
      throw invalidParameter(`Network interface '${eniId}' is currently in use.`);
    }
    this.subnet(eni.subnetId).release([eni.primaryIp, ...eni.secondaryIps]);
    this.#enis.delete(eniId);
    return eni;
  }

  /** Put a deleted ENI back exactly as it was (rollback). */
  restoreEni(eni: Eni): void {
    this.subnet(eni.subnetId).claim([eni.primaryIp, ...eni.secondaryIps]);
    this.#enis.set(eni.eniId, eni);
  }

  attach(eniId: string, instanceId: string, deviceIndex: number, deleteOnTermination = false): Attachment {
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
    const attachment: Attachment = {
      attachmentId: this.#ids.unique('eni-attach-'),
      instanceId,
      deviceIndex,
      attachTime: this.#now(),
      deleteOnTermination,
    };
    eni.attachment = attachment;
    return attachment;
  }

  detach(attachmentId: string): { eni: Eni; attachment: Attachment } {
    const eni = this.eniByAttachment(attachmentId);
    const attachment = eni.attachment!;
    if (attachment.deviceIndex === 0) {
      throw new Ec2Error(
        'OperationNotPermitted',
        `The network interface at device index 0 and networkCard index 0 cannot be detached.`,
      );
    }
    eni.attachment = undefined;
    return { eni, attachment };
  }

  /** Re-attach with the same attachment (rollback of a detach). */
  restoreAttachment(eni: Eni, attachment: Attachment): void {
    eni.attachment = attachment;
  }

  assign(eniId: string, req: AssignRequest): string[] {
    const eni = this.eni(eniId);
    const wanted = 'count' in req ? req.count : req.ips.length;
    if (!Number.isInteger(wanted) || wanted < 1) {
      throw invalidParameter(`Invalid value '${wanted}' for secondaryPrivateIpAddressCount`);
    }
    const limit = eni.attachment ? this.instance(eni.attachment.instanceId).limits.ipsPerEni : undefined;
    if (limit !== undefined && 1 + eni.secondaryIps.length + wanted > limit) {
      throw new Ec2Error('PrivateIpAddressLimitExceeded', 'Number of private addresses will exceed limit.');
    }
    const pool = this.subnet(eni.subnetId);
    let ips: string[];
    if ('count' in req) {
      ips = pool.allocate(req.count);
    } else {
      pool.claim(req.ips);
      ips = [...req.ips];
    }
    eni.secondaryIps.push(...ips);
    return ips;
  }

  unassign(eniId: string, ips: readonly string[]): void {
    const eni = this.eni(eniId);
    if (ips.length === 0) throw invalidParameter('At least one private IP address must be given');
    for (const ip of ips) {
      if (ip === eni.primaryIp) {
        throw invalidParameter(`The primary private IP address ${ip} of ${eniId} cannot be unassigned`);
      }
      if (!eni.secondaryIps.includes(ip)) {
        throw invalidParameter(`Some of the specified addresses are not assigned to interface ${eniId}`);
      }
    }
    const gone = new Set(ips);
    const kept = eni.secondaryIps.filter((ip) => !gone.has(ip));
    eni.secondaryIps.splice(0, eni.secondaryIps.length, ...kept);
    this.subnet(eni.subnetId).release(ips);
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
    };
    const primaryEni = this.createEni({
      subnetId: req.subnetId,
      securityGroupIds: instance.securityGroupIds,
      description: `Primary network interface of ${instance.instanceId}`,
    });
    this.#instances.set(instance.instanceId, instance);
    this.attach(primaryEni.eniId, instance.instanceId, 0, true);
    return { instance, primaryEni };
  }

  /** Forget the instance; its ENIs must already be detached or deleted. */
  removeInstance(instanceId: string): Instance {
    const instance = this.instance(instanceId);
    this.#instances.delete(instanceId);
    return instance;
  }

  /** Detach unconditionally, the primary ENI included (instance termination). */
  forceDetach(eni: Eni): Attachment | undefined {
    const a = eni.attachment;
    eni.attachment = undefined;
    return a;
  }

  createTags(resourceIds: readonly string[], tags: ReadonlyMap<string, string>): void {
    const targets = resourceIds.map((id) => {
      if (id.startsWith('i-')) return this.instance(id).tags;
      if (id.startsWith('eni-')) return this.eni(id).tags;
      throw new Ec2Error('InvalidID', `The ID '${id}' is not valid`);
    });
    for (const t of targets) for (const [k, v] of tags) t.set(k, v);
  }
}
