// The agent's settings for what it may ask of the cloud (locked-down VPCs), which ENIs it manages,
// and where its credentials may come from: upstream's names with upstream's meanings, part of
// AGENT_SETTINGS (settings.ts), in the docs' order. Combinations that cannot work are refused in
// cloud-access.ts.
import { withDefault } from './setting.ts';
import { positiveInt, trueOrFalse, trueOrFalseAnyCase } from './value-kinds.ts';

export const CLOUD_ACCESS_SETTINGS = {
  imdsOnlyMode: withDefault({
    env: 'ENABLE_IMDS_ONLY_MODE',
    kind: trueOrFalse,
    default: false,
    upstream: true,
    description:
      'true: no EC2 call at all (locked-down VPCs; implies DISABLE_NETWORK_RESOURCE_PROVISIONING): the ENIs someone else attached and their addresses and /28 prefixes are read from instance metadata, and an address is lent once two reads VPCNET_IMDS_STALE_SECONDS apart list it. IMDS shows no tags nor interface types, so every ENI is used (as upstream). Refused with ENABLE_POD_ENI, ENABLE_IPv6, MANAGE_UNTAGGED_ENI=false or AWS_EC2_METADATA_DISABLED=true',
  }),
  disableNetworkResourceProvisioning: withDefault({
    env: 'DISABLE_NETWORK_RESOURCE_PROVISIONING',
    kind: trueOrFalse,
    default: false,
    upstream: true,
    description:
      'true: vpcnet changes no ENI or address in EC2: the pool lends the addresses already on the ENIs attached to the node (EC2 is still described), never grows, shrinks or frees an ENI, and sweeps no leaked ENI',
  }),
  imdsStaleSeconds: withDefault({
    env: 'VPCNET_IMDS_STALE_SECONDS',
    kind: positiveInt,
    default: 30,
    description:
      'IMDS-only mode: how stale an instance metadata read may be. An address IMDS lists is lent, and one it no longer lists leaves the pool, once two reads this far apart agree; the ENIs are read this often',
  }),
  manageUntaggedEni: withDefault({
    env: 'MANAGE_UNTAGGED_ENI',
    kind: trueOrFalse,
    default: true,
    upstream: true,
    description:
      'false: an ENI carrying neither the tag `node.k8s.amazonaws.com/instance_id` of this instance (vpcnet and upstream tag the ENIs they create so) nor a `node.k8s.amazonaws.com/no_manage` tag other than true is left alone, as upstream. Either way an ENI tagged no_manage=true is left alone, and the primary ENI is always used',
  }),
  manageEnisNonSchedulable: withDefault({
    env: 'AWS_MANAGE_ENIS_NON_SCHEDULABLE',
    kind: trueOrFalse,
    default: false,
    upstream: true,
    description:
      'false: while the node is unschedulable (taint `node.kubernetes.io/unschedulable:NoSchedule`, as `kubectl cordon` leaves it) the pool adds no address or ENI and frees no ENI, as upstream (the node is read from the Kubernetes API; without one it counts as schedulable); true: the pool is managed as on any node',
  }),
  ec2MetadataDisabled: withDefault({
    env: 'AWS_EC2_METADATA_DISABLED',
    kind: trueOrFalseAnyCase,
    default: false,
    upstream: true,
    description:
      "true: credentials never come from the instance profile; another source must be configured, else the agent does not start. The node's own facts (instance, ENIs, and the region unless AWS_REGION is set) are still read from instance metadata, the agent's only source of them (aws-node, whose IMDS client obeys this variable, does not start at all)",
  }),
} as const;
