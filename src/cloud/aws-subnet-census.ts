// What a census of one subnet reads from EC2, parsed at the edge: its CIDR reservations
// (GetSubnetCidrReservations' subnetIpv4CidrReservationSet) and what its ENIs hold
// (DescribeNetworkInterfaces filtered by subnet-id). A field EC2 left out or sent malformed is an
// InvalidResponse naming it: a census built on a guess would place pods on a wrong count.
import { isCidr, isIpv4 } from '../infra/ipv4.ts';
import type { Ec2NetworkInterface } from './aws-network-interface.ts';
import type { SubnetAddressUse, SubnetCidrReservation } from './cloud.ts';
import { invalidResponse } from './ec2-errors.ts';
import type { QueryStruct } from './ec2-query/query-form.ts';
import type { XmlElement } from './ec2-query/xml-reader.ts';

/** ENIs per DescribeNetworkInterfaces page of a census: EC2's largest (MaxResults 5-1000). */
export const CENSUS_ENIS_PER_PAGE = 1000;

export function subnetEnisParams(subnetId: string): QueryStruct {
  return { Filter: [{ Name: 'subnet-id', Value: [subnetId] }], MaxResults: CENSUS_ENIS_PER_PAGE };
}

export function readCidrReservation(doing: string, xml: XmlElement): SubnetCidrReservation {
  const reservationId = xml.string('subnetCidrReservationId');
  if (reservationId === undefined)
    throw invalidResponse(doing, 'SubnetIpv4CidrReservations[].SubnetCidrReservationId');
  const cidr = xml.string('cidr');
  if (cidr === undefined || !isCidr(cidr)) {
    throw invalidResponse(doing, `an IPv4 CIDR in ${reservationId}.Cidr (got ${JSON.stringify(cidr)})`);
  }
  const type = xml.string('reservationType');
  if (type !== 'prefix' && type !== 'explicit') {
    throw invalidResponse(
      doing,
      `prefix or explicit in ${reservationId}.ReservationType (got ${JSON.stringify(type)})`,
    );
  }
  return { reservationId, cidr, type };
}

/** The addresses and prefixes of every ENI a census read lists. */
export function addressUseOf(doing: string, enis: readonly Ec2NetworkInterface[]): SubnetAddressUse {
  const addresses: string[] = [];
  const prefixes: string[] = [];
  for (const eni of enis) {
    const id = eni.networkInterfaceId ?? '(an ENI without NetworkInterfaceId)';
    for (const a of eni.privateIpAddresses) {
      if (a.privateIpAddress === undefined || !isIpv4(a.privateIpAddress)) {
        throw invalidResponse(
          doing,
          `an IPv4 address in PrivateIpAddresses of ${id} (got ${JSON.stringify(a.privateIpAddress)})`,
        );
      }
      addresses.push(a.privateIpAddress);
    }
    // EC2 lists the primary in PrivateIpAddresses too; an answer that leaves the set out still counts it.
    if (eni.privateIpAddresses.length === 0 && eni.privateIpAddress !== undefined)
      addresses.push(eni.privateIpAddress);
    for (const p of eni.ipv4Prefixes) {
      if (p.ipv4Prefix === undefined || !isCidr(p.ipv4Prefix)) {
        throw invalidResponse(
          doing,
          `an IPv4 prefix in Ipv4Prefixes of ${id} (got ${JSON.stringify(p.ipv4Prefix)})`,
        );
      }
      prefixes.push(p.ipv4Prefix);
    }
  }
  return { enis: enis.length, addresses, prefixes };
}
