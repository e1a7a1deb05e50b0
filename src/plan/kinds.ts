// The table of resource kinds: the one place that maps a resource to its rules (./kinds/*.ts).
import type { Step } from './kernel-op.ts';
import { ifAddressKind, ipv6AddressKind } from './kinds/if-address.ts';
import type { CollectContext, FieldReader, Finding, KindRules, Orphan, Views } from './kinds/kind.ts';
import { linkConfigKind } from './kinds/link-config.ts';
import { neighbourKind } from './kinds/neighbour.ts';
import { routeKind } from './kinds/route.ts';
import { ruleKind } from './kinds/rule.ts';
import { snatKind } from './kinds/snat.ts';
import { trunkDeviceKind } from './kinds/trunk-device.ts';
import { vethKind } from './kinds/veth.ts';
import { vpcAddressKind } from './kinds/vpc-address.ts';
import type { Resource, ResourceKind, ResourceOf } from './resource.ts';
import type { NodeView } from './views.ts';

export type { CollectContext, FieldReader, Finding, Orphan, Views } from './kinds/kind.ts';

const KINDS: { readonly [K in ResourceKind]: KindRules<ResourceOf<K>> } = {
  vpcAddress: vpcAddressKind,
  veth: vethKind,
  ifAddress: ifAddressKind,
  ipv6Address: ipv6AddressKind,
  route: routeKind,
  neighbour: neighbourKind,
  rule: ruleKind,
  snat: snatKind,
  linkConfig: linkConfigKind,
  trunkDevice: trunkDeviceKind,
};

function rulesOf<R extends Resource>(r: R): KindRules<R> {
  return KINDS[r.kind] as unknown as KindRules<R>;
}

export function createSteps(r: Resource): Step[] {
  return rulesOf(r).create(r);
}

export function checkResource(r: Resource, views: Views): Finding[] {
  return rulesOf(r).check(r, views);
}

export function identityOf(r: Resource): string {
  return rulesOf(r).identity(r);
}

export function describeResource(r: Resource): string {
  return rulesOf(r).describe(r);
}

/** Removal steps of several resources in the order the kernel needs (rules, routes, then links). */
export function removalSteps(resources: readonly Resource[]): Step[] {
  return [...resources]
    .sort((a, b) => rulesOf(a).removalRank - rulesOf(b).removalRank)
    .flatMap((r) => rulesOf(r).remove(r));
}

/** Every resource's findings against the views (pod side only when the pod's view is given). */
export function findDrift(resources: readonly Resource[], views: Views): Finding[] {
  return resources.flatMap((r) => checkResource(r, views));
}

/** What of every kind looks like vpcnet's on the node and is owned by no record. */
export function findOrphans(node: NodeView, ctx: CollectContext): Orphan[] {
  return (Object.values(KINDS) as KindRules<Resource>[]).flatMap((k) => k.orphans?.(node, ctx) ?? []);
}

/** A stored resource of `kind`, or undefined when no such kind exists. */
export function parseResourceFields(kind: string, read: FieldReader): Resource | undefined {
  return Object.hasOwn(KINDS, kind) ? KINDS[kind as ResourceKind].parse(read) : undefined;
}
