// The CNI 1.x Result, and its encoding for each version a runtime may ask for.
import { CNI_ERR_INCOMPATIBLE_VERSION, CniError } from './errors.ts';
import { compareVersions, isPre100, isSupportedVersion, SUPPORTED_CNI_VERSIONS } from './versions.ts';

// VERSION's answer lives in wire.ts because the plugin prints it without loading this file.
export { type VersionResult, versionResult } from './wire.ts';

export interface CniInterface {
  readonly name: string;
  readonly mac?: string;
  /** Path of the network namespace; absent for host-side interfaces. */
  readonly sandbox?: string;
  /** 1.1.0 */
  readonly mtu?: number;
  /** 1.1.0 */
  readonly socketPath?: string;
  /** 1.1.0 */
  readonly pciID?: string;
}

export interface CniIpConfig {
  /** CIDR, e.g. "10.0.1.23/32". */
  readonly address: string;
  readonly gateway?: string;
  /** Index into `interfaces`. */
  readonly interface?: number;
}

export interface CniRoute {
  readonly dst: string;
  readonly gw?: string;
  /** 1.1.0 */
  readonly mtu?: number;
  /** 1.1.0 */
  readonly advmss?: number;
  /** 1.1.0 */
  readonly priority?: number;
  /** 1.1.0 */
  readonly table?: number;
  /** 1.1.0 */
  readonly scope?: number;
}

export interface CniDns {
  readonly nameservers?: readonly string[];
  readonly domain?: string;
  readonly search?: readonly string[];
  readonly options?: readonly string[];
}

/** A result in the 1.x shape; `formatResult` encodes it for the version the runtime asked for. */
export interface CniResult {
  readonly interfaces?: readonly CniInterface[];
  readonly ips?: readonly CniIpConfig[];
  readonly routes?: readonly CniRoute[];
  readonly dns?: CniDns;
}

/** A result (or its JSON) being put together field by field. */
export type Draft<T> = { -readonly [K in keyof T]: T[K] };

export interface IpConfigJson extends CniIpConfig {
  /** Only in 0.3.x / 0.4.0 results. */
  readonly version?: '4' | '6';
}

export interface ResultJson {
  readonly cniVersion: string;
  readonly interfaces?: readonly CniInterface[];
  readonly ips?: readonly IpConfigJson[];
  readonly routes?: readonly CniRoute[];
  readonly dns?: CniDns;
}

/** Encode `result` as the JSON object a runtime speaking `cniVersion` expects. */
export function formatResult(result: CniResult, cniVersion: string): ResultJson {
  if (!isSupportedVersion(cniVersion)) {
    throw new CniError(
      CNI_ERR_INCOMPATIBLE_VERSION,
      `cannot encode a result for CNI version ${cniVersion}`,
      `supported: ${SUPPORTED_CNI_VERSIONS.join(', ')}`,
    );
  }
  const has11 = compareVersions(cniVersion, '1.1.0') >= 0;
  const out: Draft<ResultJson> = { cniVersion };
  if (result.interfaces !== undefined) {
    out.interfaces = has11 ? result.interfaces : result.interfaces.map(interfaceWithout11Fields);
  }
  if (result.ips !== undefined) {
    // 0.3.x and 0.4.0 tag each address with its family; 1.0.0 dropped the field.
    out.ips = isPre100(cniVersion)
      ? result.ips.map((ip) => ({ ...ip, version: ipFamily(ip.address) }))
      : result.ips;
  }
  if (result.routes !== undefined)
    out.routes = has11 ? result.routes : result.routes.map(routeWithout11Fields);
  if (result.dns !== undefined) out.dns = result.dns;
  return out;
}

function ipFamily(cidr: string): '4' | '6' {
  return cidr.includes(':') ? '6' : '4';
}

// Older runtimes decode strictly in places; send them only the fields their version defines.
function interfaceWithout11Fields(iface: CniInterface): CniInterface {
  const { mtu: _mtu, socketPath: _socketPath, pciID: _pciID, ...rest } = iface;
  return rest;
}

function routeWithout11Fields(route: CniRoute): CniRoute {
  const { mtu: _mtu, advmss: _advmss, priority: _priority, table: _table, scope: _scope, ...rest } = route;
  return rest;
}

/**
 * The result of a plugin that was given `prev` on ADD: `prev` with `own` added (spec 1.0.0,
 * section 5: "Plugins provided a prevResult key as part of their request configuration must output
 * it as their result, with any possible modifications made by that plugin included"). `own`'s
 * interface indexes move past `prev`'s interfaces; `own`'s DNS fields win where it sets them.
 */
export function chainResult(prev: CniResult | undefined, own: CniResult): CniResult {
  if (prev === undefined) return own;
  const offset = prev.interfaces?.length ?? 0;
  const ownIps = (own.ips ?? []).map((ip) =>
    ip.interface === undefined ? ip : { ...ip, interface: ip.interface + offset },
  );
  const out: Draft<CniResult> = {};
  const interfaces = [...(prev.interfaces ?? []), ...(own.interfaces ?? [])];
  if (prev.interfaces !== undefined || own.interfaces !== undefined) out.interfaces = interfaces;
  if (prev.ips !== undefined || own.ips !== undefined) out.ips = [...(prev.ips ?? []), ...ownIps];
  if (prev.routes !== undefined || own.routes !== undefined)
    out.routes = [...(prev.routes ?? []), ...(own.routes ?? [])];
  if (prev.dns !== undefined || own.dns !== undefined) out.dns = { ...prev.dns, ...own.dns };
  return out;
}
