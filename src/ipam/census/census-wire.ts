// The census as the cluster shares it: two annotations of the census Lease. The leader writes
// `vpcnet.io/subnet-census` (per subnet: CIDR, when EC2 was read, a bitmap of held addresses in
// base64, the reservations); any agent adds the subnets it needs to `vpcnet.io/subnet-census-wanted`
// (per subnet: CIDR, when it last asked). A /20 costs about 700 bytes, a /16 about 11 KB, well
// inside the 256 KiB an object's annotations may hold. Parsed here, at the edge: a malformed entry
// is dropped (and named), never trusted.
import { isCidr, parseCidr } from '../../infra/ipv4.ts';
import type { CensusReservation, SubnetCensus } from './subnet-census.ts';

export const CENSUS_ANNOTATION = 'vpcnet.io/subnet-census';
export const WANTED_ANNOTATION = 'vpcnet.io/subnet-census-wanted';

export interface WantedSubnet {
  readonly cidr: string;
  /** ms since epoch. */
  readonly askedAt: number;
}

type Obj = Record<string, unknown>;

function obj(v: unknown): Obj | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : undefined;
}

function parseJson(text: string | undefined): Obj {
  if (text === undefined || text === '') return {};
  try {
    return obj(JSON.parse(text)) ?? {};
  } catch {
    return {};
  }
}

function time(v: unknown): number | undefined {
  if (typeof v !== 'string') return undefined;
  const ms = Date.parse(v);
  return Number.isNaN(ms) ? undefined : ms;
}

export function encodeCensus(censuses: readonly SubnetCensus[]): string {
  const subnets: Obj = {};
  for (const c of censuses) {
    subnets[c.subnetId] = {
      cidr: c.cidr,
      takenAt: new Date(c.takenAt).toISOString(),
      held: Buffer.from(c.held).toString('base64'),
      reservations: c.reservations,
      reservationsKnown: c.reservationsKnown,
    };
  }
  return JSON.stringify({ subnets });
}

/** The censuses an annotation holds; `rejected` names the entries that were not one. */
export function decodeCensus(text: string | undefined): { censuses: SubnetCensus[]; rejected: string[] } {
  const censuses: SubnetCensus[] = [];
  const rejected: string[] = [];
  for (const [subnetId, raw] of Object.entries(obj(parseJson(text).subnets) ?? {})) {
    const c = obj(raw);
    const cidr = c?.cidr;
    const takenAt = time(c?.takenAt);
    const reservations = c?.reservations;
    if (typeof cidr !== 'string' || !isCidr(cidr) || takenAt === undefined || typeof c?.held !== 'string') {
      rejected.push(subnetId);
      continue;
    }
    const held = new Uint8Array(Buffer.from(c.held, 'base64'));
    const parsed = Array.isArray(reservations) ? reservations.map(reservationOf) : [undefined];
    if (held.length !== Math.ceil(parseCidr(cidr).size / 8) || parsed.some((r) => r === undefined)) {
      rejected.push(subnetId);
      continue;
    }
    censuses.push({
      subnetId,
      cidr,
      takenAt,
      held,
      reservations: parsed as CensusReservation[],
      reservationsKnown: c.reservationsKnown === true,
    });
  }
  return { censuses, rejected };
}

function reservationOf(v: unknown): CensusReservation | undefined {
  const r = obj(v);
  if (typeof r?.cidr !== 'string' || !isCidr(r.cidr)) return undefined;
  return r.type === 'prefix' || r.type === 'explicit' ? { cidr: r.cidr, type: r.type } : undefined;
}

export function encodeWanted(wanted: ReadonlyMap<string, WantedSubnet>): string {
  const out: Obj = {};
  for (const [id, w] of wanted) out[id] = { cidr: w.cidr, askedAt: new Date(w.askedAt).toISOString() };
  return JSON.stringify(out);
}

export function decodeWanted(text: string | undefined): Map<string, WantedSubnet> {
  const out = new Map<string, WantedSubnet>();
  for (const [id, raw] of Object.entries(parseJson(text))) {
    const w = obj(raw);
    const askedAt = time(w?.askedAt);
    if (typeof w?.cidr === 'string' && isCidr(w.cidr) && askedAt !== undefined) {
      out.set(id, { cidr: w.cidr, askedAt });
    }
  }
  return out;
}
