// Admin routes for ENIs someone other than the agent manages, as in a locked-down VPC where the
// agent may not call EC2 (DISABLE_NETWORK_RESOURCE_PROVISIONING, ENABLE_IMDS_ONLY_MODE): an ENI
// created with its addresses and attached to an instance (what a launch template or an operator's
// tooling would do), and more addresses on an ENI later. None of it counts as an EC2 call of the
// agent's: it is the rest of AWS acting. The fabric follows as for EC2's own calls.
import type { VpcOperations } from './vpc/operations.ts';

export interface PreAttachedEni {
  readonly eniId: string;
  readonly mac: string;
  readonly deviceIndex: number;
  readonly primaryIp: string;
  readonly secondaryIps: readonly string[];
  readonly ipv4Prefixes: readonly string[];
}

function record(v: unknown): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('body must be a JSON object');
  return v as Record<string, unknown>;
}

function count(v: unknown, name: string): number {
  if (v === undefined) return 0;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0)
    throw new Error(`${name} must be a whole number`);
  return v;
}

function tagsOf(v: unknown): Map<string, string> {
  const tags = new Map<string, string>();
  for (const [key, value] of Object.entries(v === undefined ? {} : record(v))) {
    if (typeof value !== 'string') throw new Error(`tag ${key} must have a string value`);
    tags.set(key, value);
  }
  return tags;
}

/**
 * POST /admin/instances/{id}/enis `{ secondaryIpCount?, ipv4PrefixCount?, subnetId?, tags? }`:
 * an ENI in the instance's subnet (unless given), attached at its lowest free device index
 * without DeleteOnTermination, then given its addresses (so the fabric routes them to its link).
 */
export async function preAttachEni(
  ops: VpcOperations,
  instanceId: string,
  body: unknown,
): Promise<PreAttachedEni> {
  const v = record(body);
  const secondaryIpCount = count(v.secondaryIpCount, 'secondaryIpCount');
  const prefixCount = count(v.ipv4PrefixCount, 'ipv4PrefixCount');
  const instance = ops.state.instance(instanceId);
  const subnetId = v.subnetId === undefined ? instance.subnetId : String(v.subnetId);
  const used = new Set(ops.state.enisOf(instanceId).map((e) => e.attachment?.deviceIndex));
  let deviceIndex = 1;
  while (used.has(deviceIndex)) deviceIndex++;
  const eni = ops.createEni({
    subnetId,
    securityGroupIds: instance.securityGroupIds,
    description: 'attached by the operator',
    tags: tagsOf(v.tags),
  });
  try {
    await ops.attach(eni.eniId, instanceId, deviceIndex);
  } catch (err) {
    ops.deleteEni(eni.eniId);
    throw err;
  }
  if (secondaryIpCount > 0) await ops.assign(eni.eniId, { count: secondaryIpCount });
  if (prefixCount > 0) await ops.assignPrefixes(eni.eniId, { count: prefixCount });
  return describe(ops, eni.eniId);
}

/**
 * POST /admin/enis/{id}/addresses `{ secondaryIpCount }` or `{ ips }`: more secondary IPs on an
 * ENI (those named must be free in its subnet); DELETE with `{ ips }`: those taken off it.
 */
export async function changeEniAddresses(
  ops: VpcOperations,
  eniId: string,
  method: 'POST' | 'DELETE',
  body: unknown,
): Promise<PreAttachedEni> {
  const v = record(body);
  if (method === 'DELETE') {
    const ips = v.ips;
    if (!Array.isArray(ips) || ips.length === 0 || !ips.every((ip) => typeof ip === 'string'))
      throw new Error('ips must be a non-empty list of addresses');
    await ops.unassign(eniId, ips);
    return describe(ops, eniId);
  }
  if (v.ips !== undefined) {
    const ips = v.ips;
    if (!Array.isArray(ips) || ips.length === 0 || !ips.every((ip) => typeof ip === 'string'))
      throw new Error('ips must be a non-empty list of addresses');
    await ops.assign(eniId, { ips });
    return describe(ops, eniId);
  }
  const wanted = count(v.secondaryIpCount, 'secondaryIpCount');
  if (wanted === 0) throw new Error('secondaryIpCount must be at least 1 (or give ips)');
  await ops.assign(eniId, { count: wanted });
  return describe(ops, eniId);
}

function describe(ops: VpcOperations, eniId: string): PreAttachedEni {
  const eni = ops.state.eni(eniId);
  return {
    eniId: eni.eniId,
    mac: eni.mac,
    deviceIndex: eni.attachment?.deviceIndex ?? -1,
    primaryIp: eni.primaryIp,
    secondaryIps: [...eni.secondaryIps],
    ipv4Prefixes: [...eni.ipv4Prefixes],
  };
}
