// DescribeVpcs: the emulator's one VPC with its IPv4 CIDR blocks (the primary and any associated
// later) and, when dual-stack, its IPv6 /56 (cidrBlockAssociationSet, ipv6CidrBlockAssociationSet).
import type { VpcView } from '../vpc/view.ts';
import { Ec2Error } from './error.ts';
import type { QueryParams } from './params.ts';
import { OWNER_ID } from './render.ts';
import type { XmlObject } from './xml.ts';

export function describeVpcs(p: QueryParams, view: VpcView): XmlObject {
  const vpcId = view.spec.vpcId;
  const unknown = p.list('VpcId').find((id) => id !== vpcId);
  if (unknown !== undefined)
    throw new Ec2Error('InvalidVpcID.NotFound', `The vpc ID '${unknown}' does not exist`);
  const suffix = vpcId.slice('vpc-'.length);
  const ipv6 = view.spec.ipv6Cidr;
  return {
    vpcSet: [
      {
        vpcId,
        ownerId: OWNER_ID,
        state: 'available',
        cidrBlock: view.spec.cidr,
        cidrBlockAssociationSet: view.vpcCidrs().map((cidrBlock, i) => ({
          associationId: `vpc-cidr-assoc-${suffix}${i}`,
          cidrBlock,
          cidrBlockState: { state: 'associated' },
        })),
        ipv6CidrBlockAssociationSet:
          ipv6 === undefined
            ? []
            : [
                {
                  associationId: `vpc-cidr-assoc-${suffix}v6`,
                  ipv6CidrBlock: ipv6,
                  ipv6CidrBlockState: { state: 'associated' },
                  networkBorderGroup: view.spec.region,
                  ipv6Pool: 'Amazon',
                },
              ],
        instanceTenancy: 'default',
        isDefault: false,
      },
    ],
  };
}
