// Delegated /28 prefixes (ENABLE_PREFIX_DELEGATION) as the pool sees them: a prefix lends its 16
// addresses to pods like secondary IPs do, and an ENI may hold both (a node switched between modes,
// or prefix mode that fell back to secondary IPs). Which prefix an address belongs to is derived
// from the address and its ENI's prefixes, so the ledger's records need no new field.
import type { EniInfo } from '../../cloud/cloud.ts';
import { cidrContains, formatIpv4, type Ipv4Cidr, parseCidr, parseIpv4 } from '../../infra/ipv4.ts';

/** Addresses in a delegated IPv4 prefix (/28). */
export const PREFIX_SIZE = 16;

/** The 16 addresses of a /28 prefix, lowest first. */
export function prefixAddresses(prefix: string): string[] {
  const cidr = parseCidr(prefix);
  return Array.from({ length: cidr.size }, (_, i) => formatIpv4(cidr.network + i));
}

/** Every address an ENI lends to pods: its secondary IPs, then its prefixes' addresses. */
export function lendableAddresses(eni: EniInfo): string[] {
  return [...eni.secondaryIps, ...(eni.ipv4Prefixes ?? []).flatMap(prefixAddresses)];
}

/** The prefixes on each managed ENI, as vpcnet last assigned, released or described them. */
export class PrefixBook {
  readonly #byEni = new Map<string, string[]>();
  /** Parsed once: prefixOf runs for every address on each ADD's pool decision. */
  readonly #parsed = new Map<string, Ipv4Cidr>();

  /** Takes the ENI's prefixes from a describe (an ENI entering the pool). */
  learn(eni: EniInfo): void {
    this.#byEni.set(eni.eniId, [...(eni.ipv4Prefixes ?? [])]);
  }

  add(eniId: string, prefixes: readonly string[]): void {
    this.#byEni.set(eniId, [...this.prefixesOf(eniId), ...prefixes]);
  }

  remove(eniId: string, prefixes: readonly string[]): void {
    const gone = new Set(prefixes);
    this.#byEni.set(
      eniId,
      this.prefixesOf(eniId).filter((p) => !gone.has(p)),
    );
  }

  prefixesOf(eniId: string): readonly string[] {
    return this.#byEni.get(eniId) ?? [];
  }

  /** The prefix of `eniId` that holds `ip`, if any. */
  prefixOf(eniId: string, ip: string): string | undefined {
    const a = parseIpv4(ip);
    return this.prefixesOf(eniId).find((p) => cidrContains(this.#cidr(p), a));
  }

  #cidr(prefix: string): Ipv4Cidr {
    let cidr = this.#parsed.get(prefix);
    if (cidr === undefined) {
      cidr = parseCidr(prefix);
      this.#parsed.set(prefix, cidr);
    }
    return cidr;
  }

  /** True when some ENI holds a prefix (a node switched from prefix mode still has some). */
  any(): boolean {
    for (const prefixes of this.#byEni.values()) if (prefixes.length > 0) return true;
    return false;
  }
}
