// The ENIs attached to the instance as instance metadata lists them (IMDS-only mode, where no EC2
// call is made): per MAC under network/interfaces/macs/, the paths upstream reads in that mode —
// interface-id, device-number, local-ipv4s (the primary first), ipv4-prefix (absent when the ENI
// has none), subnet-id, subnet-ipv4-cidr-block. IMDS shows neither tags nor the interface type nor
// the attachment ID: every ENI reads as a plain interface without tags, as upstream's do.
import { isCidr, isIpv4 } from '../infra/ipv4.ts';
import type { EniInfo, InstanceTypeLimits } from './cloud.ts';
import { type ImdsClient, ImdsError } from './imds.ts';

const MACS = 'network/interfaces/macs/';

/** Every attached ENI, by device number. One listing, then six reads per ENI, in parallel. */
export async function readAttachedEnis(imds: ImdsClient): Promise<EniInfo[]> {
  const macs = (await imds.getLines(MACS)).map((m) => m.replace(/\/+$/, ''));
  const enis = await Promise.all(macs.map((mac) => readEni(imds, mac)));
  return enis.sort((a, b) => a.deviceNumber - b.deviceNumber);
}

/**
 * What stands in for the instance type's limits when EC2 cannot be asked: the ENIs attached, and
 * the most addresses (and prefixes) one of them holds. Nothing grows in IMDS-only mode; these
 * feed only the pool's figures.
 */
export function limitsOfAttached(enis: readonly EniInfo[]): InstanceTypeLimits {
  const perEni = enis.map((e) => 1 + e.secondaryIps.length + (e.ipv4Prefixes?.length ?? 0));
  return { maxEnis: enis.length, ipsPerEni: Math.max(1, ...perEni) };
}

async function readEni(imds: ImdsClient, mac: string): Promise<EniInfo> {
  const at = (leaf: string) => `${MACS}${mac}/${leaf}`;
  const [eniId, device, addresses, prefixes, subnetId, subnetCidr] = await Promise.all([
    scalar(imds, at('interface-id')),
    scalar(imds, at('device-number')),
    imds.getLinesOrNone(at('local-ipv4s')),
    imds.getLinesOrNone(at('ipv4-prefix')),
    scalar(imds, at('subnet-id')),
    scalar(imds, at('subnet-ipv4-cidr-block')),
  ]);
  const deviceNumber = Number(device);
  if (!/^\d+$/.test(device)) malformed(at('device-number'), 'a device number', device);
  if (addresses.length === 0 || !addresses.every(isIpv4))
    malformed(at('local-ipv4s'), 'a list of IPv4 addresses', addresses.join('\n'));
  if (!prefixes.every(isCidr)) malformed(at('ipv4-prefix'), 'a list of IPv4 CIDRs', prefixes.join('\n'));
  if (!isCidr(subnetCidr)) malformed(at('subnet-ipv4-cidr-block'), 'an IPv4 CIDR', subnetCidr);
  const [primaryIp = '', ...secondaryIps] = addresses;
  return {
    eniId,
    mac,
    deviceNumber,
    // IMDS does not list it; nothing is detached in IMDS-only mode.
    attachmentId: '',
    subnetId,
    subnetCidr,
    primaryIp,
    secondaryIps,
    ...(prefixes.length === 0 ? {} : { ipv4Prefixes: prefixes }),
    interfaceType: 'interface',
    tags: {},
  };
}

async function scalar(imds: ImdsClient, path: string): Promise<string> {
  return (await imds.get(path)).trim();
}

function malformed(path: string, what: string, got: string): never {
  throw new ImdsError(`IMDS ${path} is not ${what}: ${JSON.stringify(got)}`, path, 200, false);
}
