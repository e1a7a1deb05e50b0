// Decoding `prevResult` from a netconf into the 1.x Result, whichever version wrote it.
// DEL uses it only as a hint when the ledger has no record ("DEL does not guess").
import { CniError, CNI_ERR_INVALID_NETCONF as CODE } from './errors.ts';
import {
  expectArray,
  expectObject,
  type JsonObject,
  optionalInteger,
  optionalString,
  optionalStringArray,
  requiredString,
} from './json-fields.ts';
import type { CniDns, CniInterface, CniIpConfig, CniResult, CniRoute, Draft } from './result.ts';

/** Accepts 0.1.0/0.2.0 (`ip4`/`ip6`), 0.3.x/0.4.0 (`ips[].version`) and 1.x results. */
export function parsePrevResult(raw: unknown, path = 'prevResult'): CniResult {
  const obj = expectObject(raw, path, CODE);
  if (obj.ips === undefined && (obj.ip4 !== undefined || obj.ip6 !== undefined))
    return parseLegacy(obj, path);

  const out: Draft<CniResult> = {};
  if (obj.interfaces !== undefined) {
    out.interfaces = expectArray(obj.interfaces, `${path}.interfaces`, CODE).map((v, i) =>
      parseInterface(v, `${path}.interfaces[${i}]`),
    );
  }
  if (obj.ips !== undefined) {
    const count = out.interfaces?.length ?? 0;
    out.ips = expectArray(obj.ips, `${path}.ips`, CODE).map((v, i) => parseIp(v, `${path}.ips[${i}]`, count));
  }
  if (obj.routes !== undefined) out.routes = parseRoutes(obj.routes, `${path}.routes`);
  if (obj.dns !== undefined) out.dns = parseDns(obj.dns, `${path}.dns`);
  return out;
}

function parseInterface(raw: unknown, path: string): CniInterface {
  const o = expectObject(raw, path, CODE);
  const iface: {
    name: string;
    mac?: string;
    sandbox?: string;
    mtu?: number;
    socketPath?: string;
    pciID?: string;
  } = { name: requiredString(o, 'name', path, CODE) };
  const mac = optionalString(o, 'mac', path, CODE);
  if (mac !== undefined) iface.mac = mac;
  const sandbox = optionalString(o, 'sandbox', path, CODE);
  if (sandbox !== undefined && sandbox !== '') iface.sandbox = sandbox;
  const mtu = optionalInteger(o, 'mtu', path, CODE);
  if (mtu !== undefined) iface.mtu = mtu;
  const socketPath = optionalString(o, 'socketPath', path, CODE);
  if (socketPath !== undefined) iface.socketPath = socketPath;
  const pciID = optionalString(o, 'pciID', path, CODE);
  if (pciID !== undefined) iface.pciID = pciID;
  return iface;
}

function parseIp(raw: unknown, path: string, interfaceCount: number): CniIpConfig {
  const o = expectObject(raw, path, CODE);
  const ip: { address: string; gateway?: string; interface?: number } = {
    address: requiredString(o, 'address', path, CODE),
  };
  const gateway = optionalString(o, 'gateway', path, CODE);
  if (gateway !== undefined) ip.gateway = gateway;
  const index = optionalInteger(o, 'interface', path, CODE);
  if (index !== undefined) {
    if (index < 0 || index >= interfaceCount) {
      throw new CniError(CODE, `${path}.interface ${index} names no entry of interfaces`);
    }
    ip.interface = index;
  }
  // `version` (0.3.x/0.4.0) is derivable from the address, so it is not kept.
  return ip;
}

function parseRoutes(raw: unknown, path: string): readonly CniRoute[] {
  return expectArray(raw, path, CODE).map((v, i) => {
    const p = `${path}[${i}]`;
    const o = expectObject(v, p, CODE);
    const route: {
      dst: string;
      gw?: string;
      mtu?: number;
      advmss?: number;
      priority?: number;
      table?: number;
      scope?: number;
    } = { dst: requiredString(o, 'dst', p, CODE) };
    const gw = optionalString(o, 'gw', p, CODE);
    if (gw !== undefined) route.gw = gw;
    for (const key of ['mtu', 'advmss', 'priority', 'table', 'scope'] as const) {
      const n = optionalInteger(o, key, p, CODE);
      if (n !== undefined) route[key] = n;
    }
    return route;
  });
}

function parseDns(raw: unknown, path: string): CniDns {
  const o = expectObject(raw, path, CODE);
  const dns: {
    nameservers?: readonly string[];
    domain?: string;
    search?: readonly string[];
    options?: readonly string[];
  } = {};
  const nameservers = optionalStringArray(o, 'nameservers', path, CODE);
  if (nameservers !== undefined) dns.nameservers = nameservers;
  const domain = optionalString(o, 'domain', path, CODE);
  if (domain !== undefined) dns.domain = domain;
  const search = optionalStringArray(o, 'search', path, CODE);
  if (search !== undefined) dns.search = search;
  const options = optionalStringArray(o, 'options', path, CODE);
  if (options !== undefined) dns.options = options;
  return dns;
}

/** 0.1.0/0.2.0: one `ip4` and one `ip6` object, each with its own routes, and no interfaces. */
function parseLegacy(obj: JsonObject, path: string): CniResult {
  const ips: CniIpConfig[] = [];
  const routes: CniRoute[] = [];
  for (const family of ['ip4', 'ip6'] as const) {
    if (obj[family] === undefined) continue;
    const p = `${path}.${family}`;
    const o = expectObject(obj[family], p, CODE);
    const address = requiredString(o, 'ip', p, CODE);
    const gateway = optionalString(o, 'gateway', p, CODE);
    ips.push(gateway === undefined ? { address } : { address, gateway });
    if (o.routes !== undefined) routes.push(...parseRoutes(o.routes, `${p}.routes`));
  }
  const out: { ips: readonly CniIpConfig[]; routes: readonly CniRoute[]; dns?: CniDns } = { ips, routes };
  if (obj.dns !== undefined) out.dns = parseDns(obj.dns, `${path}.dns`);
  return out;
}

/**
 * The addresses (without prefix length) `result` puts on the sandbox interface `ifName`: what the
 * plugin that created that interface must find on CHECK. IPs of other interfaces, which later
 * plugins in a chain may add ("The plugin must allow for a later chained plugin to have modified
 * networking resources"), and IPs with no interface index are not its to check.
 */
export function addressesOnInterface(result: CniResult, ifName: string, netns?: string): string[] {
  const interfaces = result.interfaces ?? [];
  return (result.ips ?? []).flatMap((ip) => {
    const iface = ip.interface === undefined ? undefined : interfaces[ip.interface];
    if (iface?.name !== ifName || iface.sandbox === undefined) return [];
    if (netns !== undefined && netns !== '' && iface.sandbox !== netns) return [];
    return [ip.address.split('/')[0] ?? ip.address];
  });
}
