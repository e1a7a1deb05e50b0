// Admin routes for what shares a subnet with the cluster (vpc/tenants.ts): other tenants' ENIs,
// CIDR reservations, a seeded pre-fragmentation, and the ground truth a census is checked against.
//   POST   /admin/subnets/{id}/fragmentation      one tenant address in every /28 -> {taken, available}
//   DELETE /admin/subnets/{id}/fragmentation      gives them back -> {available}
//   POST   /admin/subnets/{id}/pre-fragmentation  PreFragmentation -> TenantSummary
//   POST   /admin/subnets/{id}/tenants            {addresses, perEni?, label?}: tenant ENIs of
//                                                 perEni addresses each (default 1; a subnet
//                                                 filled by someone else) -> {made, …}
//   DELETE /admin/subnets/{id}/tenants            {label?}: those ENIs go -> {removed, …}
//   POST   /admin/subnets/{id}/cidr-reservations  {cidr, type, description?} -> the reservation
//   DELETE /admin/cidr-reservations/{id}          -> the reservation that went
//   GET    /admin/subnets/{id}/capacity           -> {freePrefixes: [/28…], freeAddresses, available}
import type { PreFragmentation } from './api.ts';
import type { VpcState } from './vpc/state.ts';
import type { CidrReservation } from './vpc/subnet-reservations.ts';
import {
  addTenantAddresses,
  fragmentEveryBlock,
  preFragment,
  removeTenants,
  summary,
} from './vpc/tenants.ts';

const SUBNET_ROUTE =
  /^\/admin\/subnets\/([^/]+)\/(fragmentation|pre-fragmentation|tenants|cidr-reservations|capacity)$/;
const RESERVATION_ROUTE = /^\/admin\/cidr-reservations\/([^/]+)$/;

function record(v: unknown): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('body must be a JSON object');
  return v as Record<string, unknown>;
}

function count(v: unknown, name: string, required = false): number | undefined {
  if (v === undefined && !required) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0)
    throw new Error(`${name} must be a whole number ≥ 0`);
  return v;
}

function optionalText(v: unknown, name: string): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || v === '') throw new Error(`${name} must be a non-empty string`);
  return v;
}

export function parsePreFragmentation(body: unknown): PreFragmentation {
  const v = record(body);
  const seed = count(v.seed, 'seed', true) ?? 0;
  const reservations = v.reservations === undefined ? [] : v.reservations;
  if (!Array.isArray(reservations)) throw new Error('reservations must be a list of {cidr, type}');
  const parsed = reservations.map((r, i) => {
    const x = record(r);
    const cidr = optionalText(x.cidr, `reservations[${i}].cidr`);
    if (cidr === undefined) throw new Error(`reservations[${i}].cidr is required`);
    if (x.type !== 'prefix' && x.type !== 'explicit')
      throw new Error(`reservations[${i}].type must be prefix or explicit`);
    const description = optionalText(x.description, `reservations[${i}].description`);
    return { cidr, type: x.type, ...(description === undefined ? {} : { description }) } as const;
  });
  const tenantEnis = count(v.tenantEnis, 'tenantEnis');
  const addressesPerEni = count(v.addressesPerEni, 'addressesPerEni');
  const prefixesPerEni = count(v.prefixesPerEni, 'prefixesPerEni');
  return {
    seed,
    ...(tenantEnis === undefined ? {} : { tenantEnis }),
    ...(addressesPerEni === undefined ? {} : { addressesPerEni }),
    ...(prefixesPerEni === undefined ? {} : { prefixesPerEni }),
    reservations: parsed,
  };
}

function renderReservation(r: CidrReservation): Record<string, unknown> {
  return {
    reservationId: r.reservationId,
    subnetId: r.subnetId,
    cidr: r.cidr,
    type: r.type,
    description: r.description,
  };
}

/** The answer to a tenant route, or undefined when `path` is none of them. */
export function handleTenantRoute(
  state: VpcState,
  method: string,
  path: string,
  body: unknown,
): { status: number; body: unknown } | undefined {
  const reservation = RESERVATION_ROUTE.exec(path);
  if (reservation?.[1] !== undefined && method === 'DELETE') {
    return {
      status: 200,
      body: renderReservation(state.deleteCidrReservation(decodeURIComponent(reservation[1]))),
    };
  }
  const m = SUBNET_ROUTE.exec(path);
  if (m?.[1] === undefined) return undefined;
  const subnetId = decodeURIComponent(m[1]);
  const pool = state.subnet(subnetId);
  switch (`${method} ${m[2]}`) {
    case 'POST fragmentation':
      return {
        status: 200,
        body: { taken: fragmentEveryBlock(state, subnetId), available: pool.availableCount },
      };
    case 'DELETE fragmentation':
      removeTenants(state, subnetId, 'fragmentation');
      return { status: 200, body: { available: pool.availableCount } };
    case 'POST pre-fragmentation':
      return { status: 200, body: preFragment(state, subnetId, parsePreFragmentation(body)) };
    case 'POST tenants': {
      const v = record(body);
      const made = addTenantAddresses(
        state,
        subnetId,
        count(v.addresses, 'addresses', true) ?? 0,
        optionalText(v.label, 'label') ?? 'tenant',
        Math.max(1, count(v.perEni, 'perEni') ?? 1),
      );
      return { status: 200, body: { made, ...summary(state, subnetId) } };
    }
    case 'DELETE tenants': {
      const label = optionalText(record(body).label, 'label');
      return {
        status: 200,
        body: { removed: removeTenants(state, subnetId, label), ...summary(state, subnetId) },
      };
    }
    case 'POST cidr-reservations': {
      const v = record(body);
      const cidr = optionalText(v.cidr, 'cidr');
      const type = optionalText(v.type, 'type');
      if (cidr === undefined || type === undefined) throw new Error('cidr and type are required');
      return {
        status: 201,
        body: renderReservation(
          state.reserveCidr(subnetId, cidr, type, optionalText(v.description, 'description')),
        ),
      };
    }
    case 'GET capacity':
      return {
        status: 200,
        body: {
          freePrefixes: pool.freePrefixBlocks(),
          freeAddresses: pool.freeAddressCount(),
          available: pool.availableCount,
        },
      };
    default:
      return undefined;
  }
}
