// EC2's Subnet (DescribeSubnets) read from the reply's XML into the Cloud's SubnetInfo; a required
// field EC2 left out is an InvalidResponse naming it.
import { isCidr } from '../../infra/ipv4.ts';
import type { SubnetInfo, SubnetQuery } from '../cloud.ts';
import { invalidResponse } from '../ec2-errors.ts';
import type { QueryStruct } from '../ec2-query/query-form.ts';
import type { XmlElement } from '../ec2-query/xml-reader.ts';

/**
 * Subnets per DescribeSubnets page when listing a zone: EC2's largest page (MaxResults takes
 * 5-1000), as upstream asks for its own describes. EC2 may still answer with fewer and a NextToken.
 */
export const SUBNETS_PER_PAGE = 1000;

/**
 * DescribeSubnets' parameters for a query: IDs (EC2 answers each, or InvalidSubnetID.NotFound), or
 * the zone and VPC as filters, paged: a VPC shared by many accounts' subnets can hold hundreds.
 */
export function subnetQueryParams(query: SubnetQuery): QueryStruct {
  if ('subnetIds' in query) return { SubnetId: [...query.subnetIds] };
  return {
    Filter: [
      { Name: 'vpc-id', Value: [query.vpcId] },
      { Name: 'availability-zone', Value: [query.availabilityZone] },
    ],
    MaxResults: SUBNETS_PER_PAGE,
  };
}

/** What a query is, for error messages. */
export function subnetQueryText(query: SubnetQuery): string {
  if ('subnetIds' in query) return `describe subnets ${query.subnetIds.join(', ')}`;
  return `describe the subnets of ${query.vpcId} in ${query.availabilityZone}`;
}

/** Reads one `<item>` of subnetSet. */
export function readSubnet(doing: string, xml: XmlElement): SubnetInfo {
  const subnetId = xml.string('subnetId');
  if (subnetId === undefined) throw invalidResponse(doing, 'Subnets[].SubnetId');
  const field = (name: string): string => {
    const value = xml.string(name);
    if (value === undefined) throw invalidResponse(doing, `Subnets[${subnetId}].${name}`);
    return value;
  };
  const cidr = field('cidrBlock');
  if (!isCidr(cidr))
    throw invalidResponse(doing, `an IPv4 CIDR in Subnets[${subnetId}].CidrBlock (got ${cidr})`);
  const available = xml.int('availableIpAddressCount');
  if (available === undefined) throw invalidResponse(doing, `Subnets[${subnetId}].AvailableIpAddressCount`);
  const tags: Record<string, string> = {};
  for (const tag of xml.items('tagSet')) {
    const key = tag.string('key');
    if (key === undefined) throw invalidResponse(doing, `Subnets[${subnetId}].Tags[].Key`);
    tags[key] = tag.string('value') ?? '';
  }
  return {
    subnetId,
    vpcId: field('vpcId'),
    availabilityZone: field('availabilityZone'),
    cidr,
    availableIpCount: available,
    tags,
  };
}
