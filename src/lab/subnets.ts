// `vpcnetctl lab subnet` and `vpcnetctl lab eni-config`: more subnets in a running lab's VPC (with a
// zone and tags, e.g. `kubernetes.io/role/cni=1` for subnet discovery), tags set on or removed from
// any subnet of it (the nodes' own too: `kubernetes.io/role/cni=0` drains a subnet), and ENIConfig
// objects in its Kubernetes API (custom networking), through the emulator's admin socket. The lab's VPC namespace
// routes every address of the VPC, so pods of an ENI in a new subnet reach hosts and other pods.
import { parseArgs } from 'node:util';
import { UsageError } from '../cli/usage-error.ts';
import { labLayout, NODE_SUBNET } from './layout.ts';
import { unixJson } from './unix-http.ts';

export const SUBNET_HELP = `Usage: vpcnetctl lab subnet --name L --subnet-id ID --cidr CIDR [--zone Z] [--tag KEY=VALUE ...]
       vpcnetctl lab subnet --name L --subnet-id ID [--tag KEY=VALUE ...] [--untag KEY ...]

With --cidr: adds subnet ID with CIDR (inside the lab VPC's 10.0.0.0/16, not overlapping its
other subnets, 10.0.32.0/24 of the VPC hosts nor 10.0.255.254) in zone Z (default the nodes'
us-west-2a) with the tags given. Without it: sets the tags given on the existing subnet ID (the
nodes' own is ${NODE_SUBNET.subnetId}) and removes those named by --untag, as EC2's CreateTags
and DeleteTags would. For ENABLE_SUBNET_DISCOVERY: kubernetes.io/role/cni=1 offers a subnet to
new ENIs, kubernetes.io/role/cni=0 drains it (no new addresses from its ENIs, which are freed once
empty), cni.networking.k8s.aws/cluster/NAME=shared keeps it to the cluster CLUSTER_NAME=NAME.
Prints the subnet, its tags and its free address count as JSON.
`;

export const ENI_CONFIG_HELP = `Usage: vpcnetctl lab eni-config --name L --eni-config NAME --subnet ID [--security-groups sg-1,sg-2]

Creates ENIConfig NAME (crd.k8s.amazonaws.com/v1alpha1) in the lab's Kubernetes API with
spec.subnet ID and spec.securityGroups, for AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true. The lab's
nodes carry topology.kubernetes.io/zone=us-west-2a: with
--agent-env ENI_CONFIG_LABEL_DEF=topology.kubernetes.io/zone an ENIConfig named us-west-2a is
theirs; without a label or annotation, the one named default.
`;

function required(values: Record<string, unknown>, key: string): string {
  const v = values[key];
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${key} is required`);
  return v;
}

/** `KEY=VALUE` flags into a map; the key is everything before the first `=`. */
export function parseTags(flags: readonly string[]): Record<string, string> {
  const tags: Record<string, string> = {};
  for (const flag of flags) {
    const eq = flag.indexOf('=');
    if (eq < 1) throw new UsageError(`--tag ${JSON.stringify(flag)} is not KEY=VALUE`);
    tags[flag.slice(0, eq)] = flag.slice(eq + 1);
  }
  return tags;
}

export async function labSubnetCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      name: { type: 'string' },
      'subnet-id': { type: 'string' },
      cidr: { type: 'string' },
      zone: { type: 'string' },
      tag: { type: 'string', multiple: true },
      untag: { type: 'string', multiple: true },
    },
  });
  const layout = labLayout(required(values, 'name'), 0);
  const subnetId = required(values, 'subnet-id');
  const tags = parseTags(values.tag ?? []);
  const untag = values.untag ?? [];
  let answer: unknown;
  if (values.cidr !== undefined) {
    if (untag.length > 0) throw new UsageError('--untag changes an existing subnet: leave out --cidr');
    answer = await unixJson(layout.emulator.adminSocket, 'POST', '/admin/subnets', {
      subnetId,
      cidr: required(values, 'cidr'),
      ...(values.zone === undefined ? {} : { availabilityZone: values.zone }),
      tags,
    });
  } else {
    if (values.zone !== undefined) throw new UsageError('--zone needs --cidr: a subnet keeps its zone');
    if (Object.keys(tags).length === 0 && untag.length === 0) {
      throw new UsageError('give --cidr to add a subnet, or --tag/--untag to change the tags of one');
    }
    answer = await unixJson(
      layout.emulator.adminSocket,
      'POST',
      `/admin/subnets/${encodeURIComponent(subnetId)}/tags`,
      { set: tags, remove: untag },
    );
  }
  process.stdout.write(`${JSON.stringify(answer)}\n`);
  return 0;
}

export async function labEniConfigCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      name: { type: 'string' },
      'eni-config': { type: 'string' },
      subnet: { type: 'string' },
      'security-groups': { type: 'string' },
    },
  });
  const layout = labLayout(required(values, 'name'), 0);
  const groups = (values['security-groups'] ?? '').split(',').filter((g) => g !== '');
  const made = await unixJson(layout.emulator.adminSocket, 'POST', '/admin/eniconfigs', {
    name: required(values, 'eni-config'),
    subnet: required(values, 'subnet'),
    securityGroups: groups,
  });
  process.stdout.write(`${JSON.stringify(made)}\n`);
  return 0;
}
