// Delegated /28 prefixes on an ENI (prefix delegation). Each prefix takes one of the ENI's address
// slots, as on EC2, so an ENI holds (addresses per ENI - 1) prefixes when it has no secondary IPs.
import { Ec2Error, invalidParameter } from '../ec2/error.ts';
import type { AssignRequest } from './state.ts';
import type { SubnetPool } from './subnet-pool.ts';
import type { Eni } from './view.ts';

/** Address slots in use: the primary, each secondary IP and each prefix. */
export function slotsUsed(eni: Eni): number {
  return 1 + eni.secondaryIps.length + eni.ipv4Prefixes.length;
}

/**
 * Refuses, as EC2 does, a request for no or a non-integer number of addresses (`parameter` names
 * it) or for more than the ENI's free slots (`slotLimit`, while attached).
 */
export function checkSlotsWanted(
  eni: Eni,
  req: AssignRequest,
  slotLimit: number | undefined,
  parameter: string,
): void {
  const wanted = 'count' in req ? req.count : req.ips.length;
  if (!Number.isInteger(wanted) || wanted < 1) {
    throw invalidParameter(`Invalid value '${wanted}' for ${parameter}`);
  }
  if (slotLimit !== undefined && slotsUsed(eni) + wanted > slotLimit) {
    throw new Ec2Error('PrivateIpAddressLimitExceeded', 'Number of private addresses will exceed limit.');
  }
}

/** Allocates (count) or claims (ips: prefixes as CIDRs) prefixes for the ENI; all or nothing. */
export function takePrefixes(
  eni: Eni,
  pool: SubnetPool,
  req: AssignRequest,
  slotLimit: number | undefined,
): string[] {
  checkSlotsWanted(eni, req, slotLimit, 'ipv4PrefixCount');
  const prefixes: string[] = [];
  try {
    if ('count' in req) {
      for (let i = 0; i < req.count; i++) prefixes.push(pool.allocatePrefix());
    } else {
      for (const p of req.ips) {
        pool.claimPrefix(p);
        prefixes.push(p);
      }
    }
  } catch (err) {
    for (const p of prefixes) pool.releasePrefix(p);
    throw err;
  }
  eni.ipv4Prefixes.push(...prefixes);
  return prefixes;
}

/** UnassignPrivateIpAddresses with Ipv4Prefix.N; all or nothing. */
export function givePrefixesBack(eni: Eni, pool: SubnetPool, prefixes: readonly string[]): void {
  if (prefixes.length === 0) throw invalidParameter('At least one IPv4 prefix must be given');
  for (const p of prefixes) {
    if (!eni.ipv4Prefixes.includes(p)) {
      throw invalidParameter(
        `Some of the specified IPv4 prefixes are not assigned to interface ${eni.eniId}`,
      );
    }
  }
  const gone = new Set(prefixes);
  const kept = eni.ipv4Prefixes.filter((p) => !gone.has(p));
  eni.ipv4Prefixes.splice(0, eni.ipv4Prefixes.length, ...kept);
  for (const p of prefixes) pool.releasePrefix(p);
}
