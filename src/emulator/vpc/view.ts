// A read-only view of the emulated VPC. VpcState is the live one; `snapshot()` freezes a copy,
// which the stale-read fault serves to Describe calls and IMDS (eventual consistency).

import { cidrContains, isIpv4, parseCidr, parseIpv4 } from '../../infra/ipv4.ts';
import type { VpcSpec } from '../api.ts';
import { Ec2Error, notFound } from '../ec2/error.ts';
import type { ConnectionTrackingTimeouts } from './connection-tracking.ts';
import type { NetworkLimits } from './instance-types.ts';
import type { SubnetPool } from './subnet-pool.ts';

/** An ENI's attachment to an instance (EC2's NetworkInterface.Attachment), not a pod's. */
export interface EniAttachment {
  readonly attachmentId: string;
  readonly instanceId: string;
  readonly deviceIndex: number;
  readonly attachTime: Date;
  deleteOnTermination: boolean;
}

export type InterfaceType = 'interface' | 'trunk' | 'branch';

/** A branch ENI's VLAN on a trunk ENI (pod ENIs). */
export interface TrunkAssociation {
  readonly associationId: string;
  readonly trunkEniId: string;
  readonly vlanId: number;
}

export interface Eni {
  readonly eniId: string;
  readonly mac: string;
  readonly subnetId: string;
  readonly primaryIp: string;
  readonly secondaryIps: string[];
  /** Delegated /28 prefixes (prefix delegation); each takes one of the ENI's address slots. */
  readonly ipv4Prefixes: string[];
  /** IPv6 addresses (canonical text); the first one given at launch is the ENI's primary IPv6. */
  readonly ipv6Addresses: string[];
  /** Delegated IPv6 prefixes (/80 CIDRs, canonical text). */
  readonly ipv6Prefixes: string[];
  securityGroupIds: readonly string[];
  description: string;
  readonly tags: Map<string, string>;
  /** EC2's own name for it (NetworkInterface.Attachment); undefined while the ENI is available. */
  attachment: EniAttachment | undefined;
  readonly interfaceType: InterfaceType;
  /** Set on a branch ENI while it is associated with a trunk. */
  trunkAssociation: TrunkAssociation | undefined;
  /** The connection-tracking timeouts it was created with; undefined: EC2's defaults. */
  readonly connectionTracking: ConnectionTrackingTimeouts | undefined;
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
  /** A loopback address whose IMDS requests answer for this instance (in-process fleets). */
  readonly imdsSourceAddress?: string;
}

export class VpcView {
  readonly spec: VpcSpec;
  protected readonly subnetsById: Map<string, SubnetPool>;
  protected readonly instancesById: Map<string, Instance>;
  protected readonly enisById: Map<string, Eni>;
  /** CIDR blocks associated with the VPC after launch (AssociateVpcCidrBlock's effect). */
  protected readonly associatedCidrs: string[];

  constructor(
    spec: VpcSpec,
    subnets: Map<string, SubnetPool>,
    instances: Map<string, Instance> = new Map(),
    enis: Map<string, Eni> = new Map(),
    associatedCidrs: readonly string[] = [],
  ) {
    this.spec = spec;
    this.subnetsById = subnets;
    this.instancesById = instances;
    this.enisById = enis;
    this.associatedCidrs = [...associatedCidrs];
  }

  /** The VPC's IPv4 CIDR blocks: the primary one first, as IMDS lists them. */
  vpcCidrs(): string[] {
    return [this.spec.cidr, ...this.associatedCidrs];
  }

  subnets(): SubnetPool[] {
    return [...this.subnetsById.values()];
  }

  subnet(subnetId: string): SubnetPool {
    const s = this.subnetsById.get(subnetId);
    if (s === undefined) throw notFound('SubnetID', subnetId);
    return s;
  }

  instances(): Instance[] {
    return [...this.instancesById.values()];
  }

  instance(instanceId: string): Instance {
    const i = this.instancesById.get(instanceId);
    if (i === undefined) throw notFound('InstanceID', instanceId);
    return i;
  }

  enis(): Eni[] {
    return [...this.enisById.values()];
  }

  eni(eniId: string): Eni {
    const e = this.enisById.get(eniId);
    if (e === undefined) throw notFound('NetworkInterfaceID', eniId);
    return e;
  }

  eniByAttachmentId(attachmentId: string): Eni {
    for (const e of this.enisById.values()) if (e.attachment?.attachmentId === attachmentId) return e;
    throw notFound('AttachmentID', attachmentId);
  }

  /** The branch ENI holding this trunk association. */
  eniByAssociation(associationId: string): Eni {
    for (const e of this.enisById.values()) if (e.trunkAssociation?.associationId === associationId) return e;
    throw new Ec2Error(
      'InvalidAssociationID.NotFound',
      `The association ID '${associationId}' does not exist`,
    );
  }

  /** Branch ENIs associated with the trunk, by VLAN ID. */
  branchesOf(trunkEniId: string): Eni[] {
    return this.enis()
      .filter((e) => e.trunkAssociation?.trunkEniId === trunkEniId)
      .sort((a, b) => (a.trunkAssociation?.vlanId ?? 0) - (b.trunkAssociation?.vlanId ?? 0));
  }

  /** ENIs attached to the instance, by device index. */
  enisOf(instanceId: string): Eni[] {
    return this.enis()
      .filter((e) => e.attachment?.instanceId === instanceId)
      .sort((a, b) => (a.attachment?.deviceIndex ?? 0) - (b.attachment?.deviceIndex ?? 0));
  }

  /** The instance whose ENIs hold this address (primary or secondary), or that was launched with it as its IMDS source. */
  instanceByAddress(ip: string): Instance | undefined {
    for (const i of this.instancesById.values()) if (i.imdsSourceAddress === ip) return i;
    for (const e of this.enisById.values()) {
      if (
        e.attachment !== undefined &&
        (e.primaryIp === ip || e.secondaryIps.includes(ip) || inPrefixes(e, ip))
      ) {
        return this.instancesById.get(e.attachment.instanceId);
      }
    }
    return undefined;
  }

  /** A deep copy that later changes do not reach (subnet pools stay shared: free counts are live). */
  snapshot(): VpcView {
    const instances = new Map<string, Instance>();
    for (const [id, i] of this.instancesById) instances.set(id, { ...i, tags: new Map(i.tags) });
    const enis = new Map<string, Eni>();
    for (const [id, e] of this.enisById) {
      enis.set(id, {
        ...e,
        secondaryIps: [...e.secondaryIps],
        ipv4Prefixes: [...e.ipv4Prefixes],
        ipv6Addresses: [...e.ipv6Addresses],
        ipv6Prefixes: [...e.ipv6Prefixes],
        tags: new Map(e.tags),
        attachment: e.attachment === undefined ? undefined : { ...e.attachment },
        trunkAssociation: e.trunkAssociation === undefined ? undefined : { ...e.trunkAssociation },
      });
    }
    return new VpcView(this.spec, this.subnetsById, instances, enis, this.associatedCidrs);
  }
}

function inPrefixes(eni: Eni, ip: string): boolean {
  if (!isIpv4(ip)) return false;
  const a = parseIpv4(ip);
  return eni.ipv4Prefixes.some((p) => cidrContains(parseCidr(p), a));
}
