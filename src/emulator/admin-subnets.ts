// Admin routes for what custom networking and subnet discovery need in a lab: more subnets in the
// VPC (with a zone and tags, as CreateSubnet + CreateTags would make them), tags set on or removed
// from any subnet (as CreateTags and DeleteTags would), and ENIConfig objects in the Kubernetes
// slice (as `kubectl apply` would). The fabric routes any address of the VPC, so an
// ENI of a new subnet is reachable like one of the node's.
import { formatIpv6Cidr, parseIpv6Cidr } from '../infra/ipv6-cidr.ts';
import type { SubnetSpec } from './api.ts';
import type { ObjectStore } from './kube/object-store.ts';
import type { JsonObject } from './kube/objects.ts';
import type { VpcState } from './vpc/state.ts';

function record(v: unknown): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('body must be a JSON object');
  return v as Record<string, unknown>;
}

function requiredString(v: unknown, name: string): string {
  if (typeof v !== 'string' || v === '') throw new Error(`${name} is a required string`);
  return v;
}

function stringTags(v: unknown): Record<string, string> {
  const tags = v === undefined ? {} : record(v);
  for (const [key, value] of Object.entries(tags)) {
    if (typeof value !== 'string') throw new Error(`tag ${key} must have a string value`);
  }
  return tags as Record<string, string>;
}

export function parseSubnetRequest(body: unknown, defaultZone: string): SubnetSpec {
  const v = record(body);
  const tags = stringTags(v.tags);
  return {
    subnetId: requiredString(v.subnetId, 'subnetId'),
    cidr: requiredString(v.cidr, 'cidr'),
    availabilityZone:
      v.availabilityZone === undefined ? defaultZone : requiredString(v.availabilityZone, 'availabilityZone'),
    tags,
  };
}

/**
 * POST /admin/subnets/ID/tags: `{ set?: {key: value}, remove?: [key] }`, removals first (as a
 * DeleteTags then a CreateTags); answers the subnet's tags and free address count.
 */
export function changeSubnetTags(
  state: VpcState,
  subnetId: string,
  body: unknown,
): { subnetId: string; cidr: string; tags: Record<string, string>; available: number } {
  const v = record(body);
  const set = stringTags(v.set);
  const remove = v.remove ?? [];
  if (!Array.isArray(remove) || !remove.every((k) => typeof k === 'string'))
    throw new Error('remove must be a string array of tag keys');
  if (remove.length > 0) state.deleteTags([subnetId], new Map(remove.map((k) => [k, undefined])));
  if (Object.keys(set).length > 0) state.createTags([subnetId], new Map(Object.entries(set)));
  const pool = state.subnet(subnetId);
  return {
    subnetId,
    cidr: pool.spec.cidr,
    tags: Object.fromEntries(pool.tags),
    available: pool.availableCount,
  };
}

/** POST /admin/subnets: adds the subnet; answers it as DescribeSubnets would count it. */
export function addSubnet(
  state: VpcState,
  body: unknown,
): { subnetId: string; cidr: string; ipv6Cidr?: string; available: number } {
  const zone = state.subnets()[0]?.spec.availabilityZone ?? `${state.spec.region}a`;
  const spec = parseSubnetRequest(body, zone);
  // In a dual-stack VPC subnet N (from 0, in order of creation) gets the /56's Nth /64, as the lab's do.
  const ipv6Cidr =
    state.spec.ipv6Cidr === undefined
      ? undefined
      : nthIpv6Subnet(state.spec.ipv6Cidr, state.subnets().length);
  const pool = state.addSubnet(ipv6Cidr === undefined ? spec : { ...spec, ipv6Cidr });
  return {
    subnetId: pool.spec.subnetId,
    cidr: pool.spec.cidr,
    ...(ipv6Cidr === undefined ? {} : { ipv6Cidr }),
    available: pool.availableCount,
  };
}

/** POST /admin/eniconfigs: `{ name, subnet, securityGroups? }` becomes an ENIConfig object. */
export function addEniConfig(store: ObjectStore, body: unknown): JsonObject {
  const v = record(body);
  const name = requiredString(v.name, 'name');
  const subnet = requiredString(v.subnet, 'subnet');
  const groups = v.securityGroups ?? [];
  if (!Array.isArray(groups) || !groups.every((g) => typeof g === 'string')) {
    throw new Error('securityGroups must be a string array');
  }
  return store.create(undefined, { metadata: { name }, spec: { subnet, securityGroups: groups } });
}

function nthIpv6Subnet(vpcIpv6Cidr: string, n: number): string {
  return formatIpv6Cidr({ base: parseIpv6Cidr(vpcIpv6Cidr).base + (BigInt(n) << 64n), prefixLength: 64 });
}
