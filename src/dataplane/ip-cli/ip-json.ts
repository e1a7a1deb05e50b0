// Typed views of `ip -j` output. ip's JSON is external input: parse it once, here, keeping only the
// fields the resource kinds judge (../../plan/views.ts).
import type { IpAddress, IpLink, IpNeighbour, IpRoute, IpRule } from '../../plan/views.ts';

type Json = Record<string, unknown>;

function objects(value: unknown): Json[] {
  if (!Array.isArray(value)) return [];
  return value.filter((v): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v));
}

function str(o: Json, k: string): string | undefined {
  const v = o[k];
  return typeof v === 'string' ? v : undefined;
}

function num(o: Json, k: string): number | undefined {
  const v = o[k];
  return typeof v === 'number' ? v : undefined;
}

function obj(o: Json, k: string): Json | undefined {
  const v = o[k];
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : undefined;
}

function strings(o: Json, k: string): string[] {
  const v = o[k];
  return Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : [];
}

/** Keys of `ip -j rule show` that the view models; any other key makes a rule "not vpcnet's". */
// `protocol` (who made the rule, shown by `-d`) selects nothing.
const RULE_KEYS = new Set([
  'priority',
  'src',
  'srclen',
  'dst',
  'dstlen',
  'table',
  'iif',
  'iif_detached',
  'protocol',
]);

const TABLE_NAMES: Readonly<Record<string, number>> = { main: 254, local: 255, default: 253 };

function tableNumber(name: string | undefined): number {
  if (name === undefined) return 254;
  return TABLE_NAMES[name] ?? Number(name);
}

/** `ip -d -j addr show` (or `link show`): every link with its IPv4 and IPv6 addresses. */
export function parseLinks(value: unknown): IpLink[] {
  return objects(value).flatMap((o): IpLink[] => {
    const ifname = str(o, 'ifname');
    if (ifname === undefined) return [];
    const addresses = objects(o.addr_info).flatMap((a): IpAddress[] => {
      const family = str(a, 'family');
      const local = str(a, 'local');
      const prefixlen = num(a, 'prefixlen');
      return family && local && prefixlen !== undefined ? [{ family, local, prefixlen }] : [];
    });
    const info = obj(o, 'linkinfo');
    const kind = info === undefined ? undefined : str(info, 'info_kind');
    const data = info === undefined ? undefined : obj(info, 'info_data');
    const vlanId = kind === 'vlan' && data !== undefined ? num(data, 'id') : undefined;
    const parent = str(o, 'link');
    return [
      {
        ifname,
        address: (str(o, 'address') ?? '').toLowerCase(),
        flags: strings(o, 'flags'),
        mtu: num(o, 'mtu') ?? 0,
        addresses,
        ...(kind === undefined ? {} : { kind }),
        ...(parent === undefined ? {} : { parent }),
        ...(vlanId === undefined ? {} : { vlanId }),
      },
    ];
  });
}

/**
 * `ip -j route show table all`: IPv4 and IPv6 routes of every table but `local`, without the
 * link-local fe80::/64 route the kernel makes on every IPv6 link (never vpcnet's).
 */
export function parseRoutes(value: unknown): IpRoute[] {
  return objects(value).flatMap((o): IpRoute[] => {
    const dst = str(o, 'dst');
    if (dst === undefined || dst.startsWith('fe80:')) return [];
    const table = tableNumber(str(o, 'table'));
    if (table === 255) return [];
    const gateway = str(o, 'gateway');
    const dev = str(o, 'dev');
    const scope = str(o, 'scope');
    const metric = num(o, 'metric');
    return [
      {
        dst,
        table,
        ...(gateway === undefined ? {} : { gateway }),
        ...(dev === undefined ? {} : { dev }),
        ...(scope === undefined ? {} : { scope }),
        ...(metric === undefined || metric === 0 ? {} : { metric }),
      },
    ];
  });
}

export function parseRules(value: unknown): IpRule[] {
  return objects(value).flatMap((o): IpRule[] => {
    const priority = num(o, 'priority');
    const tableName = str(o, 'table');
    if (priority === undefined || tableName === undefined) return [];
    const dst = str(o, 'dst');
    const srclen = num(o, 'srclen');
    const dstlen = num(o, 'dstlen');
    const iif = str(o, 'iif');
    const other = Object.keys(o).filter((k) => !RULE_KEYS.has(k));
    return [
      {
        priority,
        src: str(o, 'src') ?? 'all',
        table: tableNumber(tableName),
        ...(srclen === undefined ? {} : { srclen }),
        ...(dst === undefined ? {} : { dst }),
        ...(dstlen === undefined ? {} : { dstlen }),
        ...(iif === undefined ? {} : { iif }),
        ...(other.length === 0 ? {} : { other }),
      },
    ];
  });
}

export function parseNeighbours(value: unknown): IpNeighbour[] {
  return objects(value).flatMap((o): IpNeighbour[] => {
    const dst = str(o, 'dst');
    if (dst === undefined) return [];
    const lladdr = str(o, 'lladdr');
    const dev = str(o, 'dev');
    return [
      {
        dst,
        state: strings(o, 'state'),
        ...(dev === undefined ? {} : { dev }),
        ...(lladdr === undefined ? {} : { lladdr: lladdr.toLowerCase() }),
      },
    ];
  });
}
