// DescribeSecurityGroups: the VPC's groups (vpc/security-groups.ts) by GroupId.N (an unknown one
// fails the call, InvalidGroup.NotFound) and by the group-id, group-name and vpc-id filters.

import type { VpcOperations } from '../vpc/operations.ts';
import type { SecurityGroup } from '../vpc/security-groups.ts';
import { applyFilters, type FilterSchema } from './filters.ts';
import { paginate } from './pagination.ts';
import type { QueryParams } from './params.ts';
import { OWNER_ID } from './render.ts';
import type { XmlObject } from './xml.ts';

const NO_TAGS: ReadonlyMap<string, string> = new Map();

export function describeSecurityGroups(p: QueryParams, ops: VpcOperations): XmlObject {
  const state = ops.state;
  const ids = p.list('GroupId');
  const chosen = ids.length > 0 ? state.securityGroups.get(ids) : state.securityGroups.list();
  const vpcId = state.spec.vpcId;
  const schema: FilterSchema<SecurityGroup> = {
    'group-id': (g) => [g.groupId],
    'group-name': (g) => [g.groupName],
    'vpc-id': () => [vpcId],
  };
  const page = paginate(
    applyFilters(chosen, p.filters(), schema, () => NO_TAGS),
    p,
  );
  return {
    securityGroupInfo: page.items.map((g) => ({
      ownerId: OWNER_ID,
      groupId: g.groupId,
      groupName: g.groupName,
      groupDescription: g.description,
      vpcId,
    })),
    nextToken: page.nextToken,
  };
}
