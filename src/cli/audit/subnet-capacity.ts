// Per subnet: the free addresses EC2 counts, and what the cluster's subnet census counts from the
// audit's own read of every ENI of the VPC (their addresses and delegated prefixes, AWS's five
// reserved addresses) with the CIDR reservations the census Lease publishes: free addresses a pod
// can still get and free aligned /28s prefix delegation can still take. The census code is the
// agents' own (ipam/census), so the audit and `vpcnetctl status` never count differently. The
// reservations come from the Lease, not EC2: no call more per subnet; without a census Lease (the
// census off, or not yet taken for that subnet) they are unknown and said so.
import { errorText } from '../../infra/error-text.ts';
import { CENSUS_ANNOTATION, decodeCensus } from '../../ipam/census/census-wire.ts';
import { type CensusReservation, CensusView, censusOf } from '../../ipam/census/subnet-census.ts';
import { KubeApiError } from '../../pods/kube-api-error.ts';
import type { Ec2Eni, Ec2Subnet } from './model.ts';
import type { KubeGet } from './sources.ts';

export interface SubnetCapacity {
  readonly subnetId: string;
  readonly cidr: string;
  readonly availabilityZone: string;
  /** EC2's AvailableIpAddressCount. */
  readonly ec2FreeAddresses: number;
  /** Addresses a pod can still be given: free and outside `explicit` reservations. */
  readonly freeAddresses: number;
  /** Aligned /28 blocks nothing holds and no `explicit` reservation covers. */
  readonly free28s: number;
  /** Whether the counts take the subnet's CIDR reservations into account (from the census Lease). */
  readonly reservationsKnown: boolean;
  /** ENIs of the VPC in this subnet. */
  readonly enis: number;
  readonly tags: Readonly<Record<string, string>>;
}

/** Per subnet, the reservations the census Lease knows. */
export type KnownReservations = ReadonlyMap<string, readonly CensusReservation[]>;

/** What the census Lease gave: the reservations it knows, and why there are none when it gave none. */
export interface LeaseReservations {
  readonly known: KnownReservations;
  /** Why the Lease gave nothing (absent, unreadable), for the report's footnote. */
  readonly note?: string;
}

/**
 * The reservations the census Lease at `lease` (NAMESPACE/NAME) publishes, per subnet whose census
 * read them. A Lease that is not there or cannot be read gives none, and says which.
 */
export async function leaseReservations(kube: KubeGet, lease: string): Promise<LeaseReservations> {
  const [namespace, name] = lease.split('/');
  let raw: unknown;
  try {
    raw = await kube(`/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${name}`);
  } catch (err) {
    const notFound =
      (err instanceof KubeApiError && err.status === 404) || /\bNotFound\b|404/.test(errorText(err));
    return {
      known: new Map(),
      note: notFound
        ? `there is no census Lease ${lease} (VPCNET_SUBNET_CENSUS off, or no census yet)`
        : `the census Lease ${lease} could not be read (${errorText(err)})`,
    };
  }
  const annotations = (raw as { metadata?: { annotations?: Record<string, string> } }).metadata?.annotations;
  const { censuses } = decodeCensus(annotations?.[CENSUS_ANNOTATION]);
  return {
    known: new Map(censuses.filter((c) => c.reservationsKnown).map((c) => [c.subnetId, c.reservations])),
  };
}

export function subnetCapacity(
  subnets: readonly Ec2Subnet[],
  enis: readonly Ec2Eni[],
  reservations: KnownReservations,
  now: number,
): SubnetCapacity[] {
  return subnets.map((s) => {
    const inSubnet = enis.filter((e) => e.subnetId === s.subnetId);
    const census = new CensusView(
      censusOf({
        subnetId: s.subnetId,
        cidr: s.cidr,
        takenAt: now,
        addresses: inSubnet.flatMap((e) => [
          ...(e.primaryIp === undefined ? [] : [e.primaryIp]),
          ...e.secondaryIps,
        ]),
        prefixes: inSubnet.flatMap((e) => e.ipv4Prefixes),
        reservations: reservations.get(s.subnetId),
      }),
    );
    const { freeAddresses, freePrefixes } = census.figures();
    return {
      subnetId: s.subnetId,
      cidr: s.cidr,
      availabilityZone: s.availabilityZone,
      ec2FreeAddresses: s.availableIpCount,
      freeAddresses,
      free28s: freePrefixes,
      reservationsKnown: census.census.reservationsKnown,
      enis: inSubnet.length,
      tags: s.tags,
    };
  });
}
