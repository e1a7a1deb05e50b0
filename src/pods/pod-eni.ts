// The `vpc.amazonaws.com/pod-eni` annotation: the branch ENI the VPC resource controller gave a pod
// with its own security groups (a JSON array; vpcnet uses its first element, as the upstream does).
// External input: every field is checked before use, and an error names the field, so a bad
// annotation fails the ADD without changing anything.
import {
  cidrContains,
  formatIpv4,
  isCidr,
  isIpv4,
  parseCidr,
  parseIpv4,
  routerAddress,
} from '../infra/ipv4.ts';

import type { BranchEni } from '../plan/binding.ts';

export type { BranchEni } from '../plan/binding.ts';

export const POD_ENI_ANNOTATION = 'vpc.amazonaws.com/pod-eni';
/** The extended resource a pod with security groups requests (the controller's webhook adds it). */
export const POD_ENI_RESOURCE = 'vpc.amazonaws.com/pod-eni';

export class PodEniAnnotationError extends Error {
  constructor(
    /** The annotation field at fault, e.g. `vlanId`. */
    readonly field: string,
    problem: string,
  ) {
    super(`${POD_ENI_ANNOTATION} annotation: ${field} ${problem}`);
    this.name = 'PodEniAnnotationError';
  }
}

const ENI_ID = /^eni-[0-9a-f]{8,17}$/;
const MAC = /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/;

/** Reads a key the way the upstream's Go decoder does: the exact name, else case-insensitively. */
function field(o: Record<string, unknown>, name: string): unknown {
  if (name in o) return o[name];
  const key = Object.keys(o).find((k) => k.toLowerCase() === name.toLowerCase());
  return key === undefined ? undefined : o[key];
}

function text(o: Record<string, unknown>, name: string): string {
  const v = field(o, name);
  if (v === undefined) throw new PodEniAnnotationError(name, 'is missing');
  if (typeof v !== 'string')
    throw new PodEniAnnotationError(name, `must be a string, got ${JSON.stringify(v)}`);
  return v;
}

/** Parses and checks the annotation's value; throws PodEniAnnotationError naming the bad field. */
export function parsePodEniAnnotation(value: string): BranchEni {
  let doc: unknown;
  try {
    doc = JSON.parse(value);
  } catch {
    throw new PodEniAnnotationError('(value)', 'is not JSON');
  }
  if (!Array.isArray(doc) || doc.length === 0) {
    throw new PodEniAnnotationError('(value)', 'must be a non-empty JSON array');
  }
  const first: unknown = doc[0];
  if (typeof first !== 'object' || first === null || Array.isArray(first)) {
    throw new PodEniAnnotationError('[0]', 'must be an object');
  }
  const o = first as Record<string, unknown>;
  const eniId = text(o, 'eniId');
  if (!ENI_ID.test(eniId))
    throw new PodEniAnnotationError('eniId', `is not an ENI ID: ${JSON.stringify(eniId)}`);
  const mac = text(o, 'ifAddress').toLowerCase();
  if (!MAC.test(mac))
    throw new PodEniAnnotationError('ifAddress', `is not a MAC address: ${JSON.stringify(mac)}`);
  const vlan = field(o, 'vlanId');
  if (typeof vlan !== 'number' || !Number.isInteger(vlan) || vlan < 1 || vlan > 4094) {
    throw new PodEniAnnotationError(
      'vlanId',
      `must be an integer from 1 to 4094, got ${JSON.stringify(vlan)}`,
    );
  }
  const subnetCidr = text(o, 'subnetCidr');
  const cidr = isCidr(subnetCidr) ? parseCidr(subnetCidr) : undefined;
  if (!cidr || cidr.prefixLength < 1 || cidr.prefixLength > 30) {
    throw new PodEniAnnotationError(
      'subnetCidr',
      `is not an IPv4 CIDR of a subnet: ${JSON.stringify(subnetCidr)}`,
    );
  }
  const ip = text(o, 'privateIp');
  if (!isIpv4(ip))
    throw new PodEniAnnotationError('privateIp', `is not an IPv4 address: ${JSON.stringify(ip)}`);
  const n = parseIpv4(ip);
  if (!cidrContains(cidr, n) || n === cidr.network || n === cidr.network + cidr.size - 1) {
    throw new PodEniAnnotationError(
      'privateIp',
      `${ip} is not a host address inside subnetCidr ${subnetCidr}`,
    );
  }
  return { eniId, mac, ip, vlanId: vlan, subnetCidr, gateway: formatIpv4(routerAddress(cidr)) };
}
