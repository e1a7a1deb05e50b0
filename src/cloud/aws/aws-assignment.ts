// AssignPrivateIpAddresses asks for a count of one kind, secondary IPs or /28 prefixes: the
// count is checked before the call, and the answer must hold exactly that many valid values.
import { isCidr, isIpv4 } from '../../infra/ipv4.ts';
import { CloudError } from '../cloud.ts';
import { invalidResponse } from '../ec2-errors.ts';
import type { QueryStruct } from '../ec2-query/query-form.ts';

/** What one kind of assignment asks for and reads back. */
export interface AssignedKind {
  readonly what: string;
  readonly countParam: 'SecondaryPrivateIpAddressCount' | 'Ipv4PrefixCount';
  readonly resultSet: string;
  readonly resultField: string;
  /** How an error names what was expected in the reply. */
  readonly expected: string;
  readonly valid: (value: string) => boolean;
}

export const SECONDARY_IPS: AssignedKind = {
  what: 'private IPs',
  countParam: 'SecondaryPrivateIpAddressCount',
  resultSet: 'assignedPrivateIpAddressesSet',
  resultField: 'privateIpAddress',
  expected: 'IPv4 AssignedPrivateIpAddresses',
  valid: isIpv4,
};

export const IPV4_PREFIXES: AssignedKind = {
  what: 'IPv4 prefixes',
  countParam: 'Ipv4PrefixCount',
  resultSet: 'assignedIpv4PrefixSet',
  resultField: 'ipv4Prefix',
  expected: 'AssignedIpv4Prefixes',
  valid: isCidr,
};

/** What the call does, for errors; a count that is not a positive integer is refused here. */
export function assignmentText(eniId: string, count: number, kind: AssignedKind): string {
  const doing = `assign ${count} ${kind.what} to ENI ${eniId}`;
  if (!Number.isInteger(count) || count < 1) {
    throw new CloudError(`cannot ${doing}: count must be a positive integer`, 'InvalidParameterValue', false);
  }
  return doing;
}

export function assignmentParams(eniId: string, count: number, kind: AssignedKind): QueryStruct {
  return { NetworkInterfaceId: eniId, [kind.countParam]: count };
}

/** The values the reply assigned: exactly `count`, each valid, else an InvalidResponse. */
export function checkAssigned(
  doing: string,
  count: number,
  kind: AssignedKind,
  values: readonly (string | undefined)[],
): string[] {
  if (values.length !== count || values.some((v) => v === undefined || !kind.valid(v))) {
    throw invalidResponse(doing, `${count} ${kind.expected} (got ${JSON.stringify(values)})`);
  }
  return values as string[];
}
