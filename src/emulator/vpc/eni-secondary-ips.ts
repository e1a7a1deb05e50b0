// Secondary private IPs on an ENI (AssignPrivateIpAddresses / UnassignPrivateIpAddresses without
// prefixes): each takes one of the ENI's address slots (eni-prefixes.ts counts them).
import { invalidParameter } from '../ec2/error.ts';
import { checkSlotsWanted } from './eni-prefixes.ts';
import type { AssignRequest } from './state.ts';
import type { SubnetPool } from './subnet-pool.ts';
import type { Eni } from './view.ts';

/** Allocates (count) or claims (ips) secondary IPs for the ENI; all or nothing. */
export function takeSecondaryIps(
  eni: Eni,
  pool: SubnetPool,
  req: AssignRequest,
  slotLimit: number | undefined,
): string[] {
  checkSlotsWanted(eni, req, slotLimit, 'secondaryPrivateIpAddressCount');
  let ips: string[];
  if ('count' in req) {
    ips = pool.allocate(req.count);
  } else {
    pool.claim(req.ips);
    ips = [...req.ips];
  }
  eni.secondaryIps.push(...ips);
  return ips;
}

/** Takes the ENI's secondary IPs `ips` back into the subnet; refuses the primary or one not on it. */
export function giveSecondaryIpsBack(eni: Eni, pool: SubnetPool, ips: readonly string[]): void {
  if (ips.length === 0) throw invalidParameter('At least one private IP address must be given');
  for (const ip of ips) {
    if (ip === eni.primaryIp) {
      throw invalidParameter(`The primary private IP address ${ip} of ${eni.eniId} cannot be unassigned`);
    }
    if (!eni.secondaryIps.includes(ip)) {
      throw invalidParameter(`Some of the specified addresses are not assigned to interface ${eni.eniId}`);
    }
  }
  const gone = new Set(ips);
  const kept = eni.secondaryIps.filter((ip) => !gone.has(ip));
  eni.secondaryIps.splice(0, eni.secondaryIps.length, ...kept);
  pool.release(ips);
}
