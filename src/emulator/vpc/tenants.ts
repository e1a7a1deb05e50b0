// Other tenants of a subnet: what shares a real subnet with a cluster (Lambda's and load
// balancers' ENIs, another cluster's nodes, CIDR reservations someone made), so that a subnet can
// start fragmented the way long-lived ones are. Everything here is EC2 state an agent can see:
// ENIs that DescribeNetworkInterfaces lists (filtered by subnet), reservations that
// GetSubnetCidrReservations lists. Nothing holds an address EC2 would not show.
import { formatIpv4 } from '../../infra/ipv4.ts';
import type { PreFragmentation, SubnetSpec } from '../api.ts';
import { seededRandom } from './ids.ts';
import type { Eni, VpcState } from './state.ts';
import { PREFIX_SIZE } from './subnet-pool.ts';

/** The tag every tenant ENI carries, valued with what made it (`fragmentation`, `seed-7`, …). */
export const TENANT_TAG = 'emulator.vpcnet.io/tenant';

/** What a pre-fragmentation or a tenant request left in the subnet. */
export interface TenantSummary {
  readonly enis: number;
  readonly addresses: number;
  readonly prefixes: number;
  readonly reservations: readonly string[];
  /** Free aligned /28s left (ground truth, SubnetPool.freePrefixBlocks). */
  readonly freePrefixes: number;
  readonly available: number;
}

function tenantEni(state: VpcState, subnetId: string, label: string): Eni {
  return state.createEni({
    subnetId,
    description: `emulated tenant (${label})`,
    tags: new Map([[TENANT_TAG, label]]),
  });
}

/**
 * Seeds the subnet as `f` says: its CIDR reservations, then `tenantEnis` ENIs, each with
 * `addressesPerEni` secondary IPs and `prefixesPerEni` /28s, all picked by EC2's own rules (at
 * random outside the reservations, from the seed). From then on the subnet also picks the
 * addresses it assigns by count at random, as EC2 does. The same seed gives the same subnet.
 */
export function preFragment(state: VpcState, subnetId: string, f: PreFragmentation): TenantSummary {
  const pool = state.subnet(subnetId);
  pool.pickAtRandom(seededRandom(f.seed));
  const reservations = (f.reservations ?? []).map(
    (r) => state.reserveCidr(subnetId, r.cidr, r.type, r.description ?? 'emulated tenant').reservationId,
  );
  const label = `seed-${f.seed}`;
  let addresses = 0;
  let prefixes = 0;
  // Prefixes before the tenants' /32s: the seed decides where those break blocks, not their order.
  const enis = Array.from({ length: f.tenantEnis ?? 0 }, () => tenantEni(state, subnetId, label));
  for (const eni of enis) {
    addresses += 1;
    if ((f.prefixesPerEni ?? 0) > 0)
      prefixes += state.assignPrefixes(eni.eniId, { count: f.prefixesPerEni ?? 0 }).length;
  }
  for (const eni of enis) {
    if ((f.addressesPerEni ?? 0) > 0)
      addresses += state.assign(eni.eniId, { count: f.addressesPerEni ?? 0 }).length;
  }
  return { ...summary(state, subnetId), enis: f.tenantEnis ?? 0, addresses, prefixes, reservations };
}

/**
 * One tenant ENI holding one free address in the middle of every /28 block: the subnet keeps free
 * addresses but can delegate no prefix (InsufficientCidrBlocks). Returns how many it took.
 */
export function fragmentEveryBlock(state: VpcState, subnetId: string): number {
  const pool = state.subnet(subnetId);
  const middles: string[] = [];
  for (let b = pool.cidr.network; b + PREFIX_SIZE <= pool.cidr.network + pool.cidr.size; b += PREFIX_SIZE) {
    const free = pool.freeIn([b + PREFIX_SIZE / 2]);
    if (free[0] !== undefined && pool.reservations.of(free[0]) === undefined)
      middles.push(formatIpv4(free[0]));
  }
  const [primary, ...rest] = middles;
  if (primary === undefined) return 0;
  const eni = state.createEni({
    subnetId,
    primaryIp: primary,
    description: 'emulated tenant (fragmentation)',
    tags: new Map([[TENANT_TAG, 'fragmentation']]),
  });
  if (rest.length > 0) state.assign(eni.eniId, { ips: rest });
  return middles.length;
}

/**
 * `count` tenant addresses (EC2 picks them), on ENIs of `perEni` addresses each (the primary
 * included): a subnet filled up by someone else. Fails like CreateNetworkInterface once the subnet
 * has no address left; what it made stays. Returns the addresses taken.
 */
export function addTenantAddresses(
  state: VpcState,
  subnetId: string,
  count: number,
  label: string,
  perEni = 1,
): number {
  let made = 0;
  while (made < count) {
    const eni = tenantEni(state, subnetId, label);
    made++;
    const more = Math.min(perEni - 1, count - made);
    if (more > 0) made += state.assign(eni.eniId, { count: more }).length;
  }
  return made;
}

/** Deletes the subnet's tenant ENIs (those with `label`, or all) and gives their addresses back. */
export function removeTenants(state: VpcState, subnetId: string, label?: string): number {
  const gone = state
    .enis()
    .filter((e) => e.subnetId === subnetId && e.tags.has(TENANT_TAG))
    .filter((e) => label === undefined || e.tags.get(TENANT_TAG) === label);
  for (const e of gone) state.deleteEni(e.eniId);
  return gone.length;
}

export function summary(state: VpcState, subnetId: string): TenantSummary {
  const pool = state.subnet(subnetId);
  const tenants = state.enis().filter((e) => e.subnetId === subnetId && e.tags.has(TENANT_TAG));
  return {
    enis: tenants.length,
    addresses: tenants.reduce((n, e) => n + 1 + e.secondaryIps.length, 0),
    prefixes: tenants.reduce((n, e) => n + e.ipv4Prefixes.length, 0),
    reservations: pool.reservations.list().map((r) => r.reservationId),
    freePrefixes: pool.freePrefixBlocks().length,
    available: pool.availableCount,
  };
}

/** Every subnet the spec declares pre-fragmented, seeded as declared (VpcState's construction). */
export function preFragmentSpec(state: VpcState, subnets: readonly SubnetSpec[]): void {
  for (const s of subnets)
    if (s.preFragmentation !== undefined) preFragment(state, s.subnetId, s.preFragmentation);
}
