// AssignIpv6Addresses / UnassignIpv6Addresses: single IPv6 addresses (Ipv6AddressCount,
// Ipv6Addresses.N) and delegated /80 prefixes (Ipv6PrefixCount, Ipv6Prefix.N), element names as
// in EC2's replies (assignedIpv6Addresses, assignedIpv6PrefixSet, unassigned…).
import type { Ipv6AssignRequest } from '../vpc/eni-ipv6.ts';
import type { VpcOperations } from '../vpc/operations.ts';
import { invalidParameter, missingParameter } from './error.ts';
import type { QueryParams } from './params.ts';
import type { XmlObject } from './xml.ts';

function assignRequest(p: QueryParams): Ipv6AssignRequest {
  const addressCount = p.int('Ipv6AddressCount');
  const addresses = p.list('Ipv6Addresses');
  const prefixCount = p.int('Ipv6PrefixCount');
  const prefixes = p.list('Ipv6Prefix');
  const given = [
    addressCount !== undefined,
    addresses.length > 0,
    prefixCount !== undefined,
    prefixes.length > 0,
  ];
  if (given.filter(Boolean).length > 1) {
    throw invalidParameter(
      'Specify only one of Ipv6Addresses, Ipv6AddressCount, Ipv6Prefix and Ipv6PrefixCount',
    );
  }
  if (addressCount !== undefined) return { addressCount };
  if (addresses.length > 0) return { addresses };
  if (prefixCount !== undefined) return { prefixCount };
  if (prefixes.length > 0) return { prefixes };
  throw missingParameter('Ipv6Addresses, Ipv6AddressCount, Ipv6Prefix or Ipv6PrefixCount');
}

export async function assignIpv6Addresses(p: QueryParams, ops: VpcOperations): Promise<XmlObject> {
  const eniId = p.require('NetworkInterfaceId');
  const given = await ops.assignIpv6(eniId, assignRequest(p));
  return {
    assignedIpv6Addresses: given.addresses,
    assignedIpv6PrefixSet: given.prefixes,
    networkInterfaceId: eniId,
  };
}

export async function unassignIpv6Addresses(p: QueryParams, ops: VpcOperations): Promise<XmlObject> {
  const eniId = p.require('NetworkInterfaceId');
  const addresses = p.list('Ipv6Addresses');
  const prefixes = p.list('Ipv6Prefix');
  if (addresses.length === 0 && prefixes.length === 0) throw missingParameter('Ipv6Addresses or Ipv6Prefix');
  await ops.unassignIpv6(eniId, { addresses, prefixes });
  return {
    networkInterfaceId: eniId,
    unassignedIpv6Addresses: addresses,
    unassignedIpv6PrefixSet: prefixes,
  };
}
