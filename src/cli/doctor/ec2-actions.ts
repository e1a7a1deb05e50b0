// Every EC2 action the cloud driver (src/cloud/aws/) can call, how the doctor probes the
// permission for it without changing anything, and when this node's agent calls it. EC2's API
// gives most of them a DryRun member: called with DryRun=true, EC2 authorizes the request and
// answers DryRunOperation (allowed) or UnauthorizedOperation (not), and does nothing else. The
// address actions (AssignPrivateIpAddresses, UnassignPrivateIpAddresses and their IPv6 forms) have
// none: IAM's policy simulator answers for them where the role may call it; else they are named as
// not verifiable ahead. ec2-actions.test.ts holds this table to the driver's source and to EC2's
// model of which requests take DryRun.

import type { QueryStruct } from '../../cloud/ec2-query/query-form.ts';
import type { AgentConfig } from '../../config/agent-config.ts';

/** What the probes name: the node's own instance, subnet, groups and primary ENI. */
export interface NodeFacts {
  readonly instanceId: string;
  readonly instanceType: string;
  readonly subnetId: string;
  readonly vpcId: string;
  readonly availabilityZone: string;
  readonly securityGroupIds: readonly string[];
  readonly primaryEniId: string;
  readonly primaryAttachmentId: string;
}

export type Ec2ActionProbe =
  | { readonly dryRun: true; readonly params: (n: NodeFacts) => QueryStruct }
  | { readonly dryRun: false; readonly why: string };

/** When the agent calls an action, by its configuration. */
type Needed = (c: AgentConfig) => boolean;

export interface DriverEc2Action {
  readonly probe: Ec2ActionProbe;
  readonly neededWhen: Needed;
  /** What the agent does with it, for the finding's message. */
  readonly purpose: string;
  /**
   * What the agent does without it, for an action it can do without (a denial is then a warning
   * naming this); absent: the agent cannot work without it (an error).
   */
  readonly without?: string;
}

const reads: Needed = (c) => !c.cloudAccess.imdsOnly;
const changes: Needed = (c) => !c.cloudAccess.imdsOnly && c.cloudAccess.provisioning;
const NO_DRY_RUN = "EC2's API has no DryRun for it";

/** The tags vpcnet puts on an ENI it creates: with them, creating one needs ec2:CreateTags too. */
const CREATE_TAGS = [
  { ResourceType: 'network-interface', Tag: [{ Key: 'vpcnet.io/created-by', Value: 'vpcnet' }] },
];

export const DRIVER_EC2_ACTIONS: Readonly<Record<string, DriverEc2Action>> = {
  DescribeNetworkInterfaces: {
    purpose: 'read the node’s ENIs and addresses',
    neededWhen: reads,
    probe: {
      dryRun: true,
      params: (n) => ({ Filter: [{ Name: 'attachment.instance-id', Value: [n.instanceId] }] }),
    },
  },
  DescribeInstanceTypes: {
    purpose: 'read the instance type’s ENI and address limits',
    neededWhen: reads,
    probe: { dryRun: true, params: (n) => ({ InstanceType: [n.instanceType] }) },
  },
  DescribeSubnets: {
    purpose: 'read subnets (CIDRs, free addresses, discovery tags)',
    neededWhen: reads,
    probe: { dryRun: true, params: (n) => ({ SubnetId: [n.subnetId] }) },
  },
  GetSubnetCidrReservations: {
    purpose: 'read the subnets’ CIDR reservations for the subnet census',
    without: 'the census counts without reservations, and no secondary IP is named for pods (EC2 picks them)',
    neededWhen: (c) => reads(c) && c.capacity.census !== 'off',
    probe: { dryRun: true, params: (n) => ({ SubnetId: n.subnetId, MaxResults: 5 }) },
  },
  DescribeTrunkInterfaceAssociations: {
    purpose: 'read the branch ENIs on the trunk (pods with security groups)',
    neededWhen: (c) => reads(c) && c.enablePodEni,
    probe: { dryRun: true, params: () => ({ MaxResults: 5 }) },
  },
  CreateNetworkInterface: {
    purpose: 'create ENIs as the pool grows (tagged at creation)',
    neededWhen: changes,
    probe: {
      dryRun: true,
      params: (n) => ({
        SubnetId: n.subnetId,
        SecurityGroupId: [...n.securityGroupIds],
        Description: 'vpcnet doctor',
        TagSpecification: CREATE_TAGS,
      }),
    },
  },
  AttachNetworkInterface: {
    purpose: 'attach the ENIs it creates',
    neededWhen: changes,
    probe: {
      dryRun: true,
      params: (n) => ({ NetworkInterfaceId: n.primaryEniId, InstanceId: n.instanceId, DeviceIndex: 1 }),
    },
  },
  ModifyNetworkInterfaceAttribute: {
    purpose: 'set DeleteOnTermination on the ENIs it attaches',
    neededWhen: changes,
    probe: {
      dryRun: true,
      params: (n) => ({
        NetworkInterfaceId: n.primaryEniId,
        Attachment: { AttachmentId: n.primaryAttachmentId, DeleteOnTermination: true },
      }),
    },
  },
  DetachNetworkInterface: {
    purpose: 'detach ENIs it frees',
    neededWhen: changes,
    probe: { dryRun: true, params: (n) => ({ AttachmentId: n.primaryAttachmentId }) },
  },
  DeleteNetworkInterface: {
    purpose: 'delete ENIs it frees and leaked ones',
    neededWhen: changes,
    probe: { dryRun: true, params: (n) => ({ NetworkInterfaceId: n.primaryEniId }) },
  },
  AssignPrivateIpAddresses: {
    purpose: 'take secondary IPs or /28 prefixes for pods',
    neededWhen: (c) => changes(c) && !c.ipv6.enabled,
    probe: { dryRun: false, why: NO_DRY_RUN },
  },
  UnassignPrivateIpAddresses: {
    purpose: 'give back secondary IPs or /28 prefixes',
    neededWhen: (c) => changes(c) && !c.ipv6.enabled,
    probe: { dryRun: false, why: NO_DRY_RUN },
  },
  AssignIpv6Addresses: {
    purpose: 'take the /80 for IPv6 pods',
    neededWhen: (c) => changes(c) && c.ipv6.enabled,
    probe: { dryRun: false, why: NO_DRY_RUN },
  },
  UnassignIpv6Addresses: {
    purpose: 'give an IPv6 /80 back',
    neededWhen: (c) => changes(c) && c.ipv6.enabled,
    probe: { dryRun: false, why: NO_DRY_RUN },
  },
};

/** The driver's actions this node's agent calls, with configuration `config`. */
export function neededActions(config: AgentConfig): string[] {
  return Object.entries(DRIVER_EC2_ACTIONS)
    .filter(([, a]) => a.neededWhen(config))
    .map(([name]) => name);
}
