// The VPC's security groups, as DescribeSecurityGroups lists them: the default group, those the
// VPC spec names, and those added later (POST /admin/security-groups). Only their existence is
// modelled (what a preflight check asks of an ENIConfig's groups); rules are not, and EC2 calls
// that name a group do not check it (tests and the lab name groups freely).
import type { VpcSpec } from '../api.ts';
import { Ec2Error } from '../ec2/error.ts';

export const DEFAULT_SECURITY_GROUP = 'sg-00000000000000001';

export interface SecurityGroup {
  readonly groupId: string;
  readonly groupName: string;
  readonly description: string;
}

const GROUP_ID = /^sg-[0-9a-f]{8,17}$/;

export class SecurityGroups {
  readonly #groups = new Map<string, SecurityGroup>();

  constructor(spec: VpcSpec) {
    this.add({
      groupId: DEFAULT_SECURITY_GROUP,
      groupName: 'default',
      description: 'default VPC security group',
    });
    for (const g of spec.securityGroups ?? []) this.add({ description: g.groupName, ...g });
  }

  add(group: SecurityGroup): SecurityGroup {
    if (!GROUP_ID.test(group.groupId))
      throw new Ec2Error('InvalidGroupId.Malformed', `Invalid id: "${group.groupId}" (expecting "sg-...")`);
    this.#groups.set(group.groupId, group);
    return group;
  }

  list(): SecurityGroup[] {
    return [...this.#groups.values()];
  }

  /** The groups asked for; an unknown one fails the call as EC2 fails it. */
  get(groupIds: readonly string[]): SecurityGroup[] {
    return groupIds.map((id) => {
      const g = this.#groups.get(id);
      if (g === undefined)
        throw new Ec2Error('InvalidGroup.NotFound', `The security group '${id}' does not exist`);
      return g;
    });
  }
}
