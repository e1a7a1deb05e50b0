// Typed views of `ip -j` output. ip's JSON is external input: parse it once, here, keeping only the
// fields the dataplane reads.

export interface IpAddress {
  readonly family: string;
  readonly local: string;
  readonly prefixlen: number;
}

export interface IpLink {
  readonly ifname: string;
  readonly address: string;
  readonly flags: readonly string[];
  readonly mtu: number;
  readonly addresses: readonly IpAddress[];
}

export interface IpRoute {
  readonly dst: string;
  readonly gateway?: string;
  readonly dev?: string;
}

export interface IpRule {
  readonly priority: number;
  /** "all" or an address; a prefix length other than the full one is in `srclen`/`dstlen`. */
  readonly src: string;
  readonly srclen?: number;
  readonly dst?: string;
  readonly dstlen?: number;
  readonly table: number;
  /**
   * Keys of selectors or actions this view does not model (iif, fwmark, not, ...), if any. Such a
   * rule is never vpcnet's, and `ip rule del` without them would match it too: GC leaves it alone.
   */
  readonly other?: readonly string[];
}

export interface IpNeighbour {
  readonly dst: string;
  readonly lladdr?: string;
  readonly state: readonly string[];
}

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

function strings(o: Json, k: string): string[] {
  const v = o[k];
  return Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : [];
}

const RULE_KEYS = new Set(['priority', 'src', 'srclen', 'dst', 'dstlen', 'table']);

const TABLE_NAMES: Readonly<Record<string, number>> = { main: 254, local: 255, default: 253 };

export function parseLinks(value: unknown): IpLink[] {
  return objects(value).flatMap((o) => {
    const ifname = str(o, 'ifname');
    if (ifname === undefined) return [];
    const addresses = objects(o.addr_info).flatMap((a): IpAddress[] => {
      const family = str(a, 'family');
      const local = str(a, 'local');
      const prefixlen = num(a, 'prefixlen');
      return family && local && prefixlen !== undefined ? [{ family, local, prefixlen }] : [];
    });
    return [
      {
        ifname,
        address: (str(o, 'address') ?? '').toLowerCase(),
        flags: strings(o, 'flags'),
        mtu: num(o, 'mtu') ?? 0,
        addresses,
      },
    ];
  });
}

export function parseRoutes(value: unknown): IpRoute[] {
  return objects(value).flatMap((o) => {
    const dst = str(o, 'dst');
    if (dst === undefined) return [];
    const gateway = str(o, 'gateway');
    const dev = str(o, 'dev');
    return [{ dst, ...(gateway === undefined ? {} : { gateway }), ...(dev === undefined ? {} : { dev }) }];
  });
}

export function parseRules(value: unknown): IpRule[] {
  return objects(value).flatMap((o) => {
    const priority = num(o, 'priority');
    const tableName = str(o, 'table');
    if (priority === undefined || tableName === undefined) return [];
    const table = TABLE_NAMES[tableName] ?? Number(tableName);
    const dst = str(o, 'dst');
    const srclen = num(o, 'srclen');
    const dstlen = num(o, 'dstlen');
    const other = Object.keys(o).filter((k) => !RULE_KEYS.has(k));
    return [
      {
        priority,
        src: str(o, 'src') ?? 'all',
        table,
        ...(srclen === undefined ? {} : { srclen }),
        ...(dst === undefined ? {} : { dst }),
        ...(dstlen === undefined ? {} : { dstlen }),
        ...(other.length === 0 ? {} : { other }),
      },
    ];
  });
}

export function parseNeighbours(value: unknown): IpNeighbour[] {
  return objects(value).flatMap((o) => {
    const dst = str(o, 'dst');
    if (dst === undefined) return [];
    const lladdr = str(o, 'lladdr');
    return [
      { dst, state: strings(o, 'state'), ...(lladdr === undefined ? {} : { lladdr: lladdr.toLowerCase() }) },
    ];
  });
}

/** A rule's selector matches exactly one host address (ip omits the length when it is /32). */
export function ruleSelects(rule: IpRule, side: 'src' | 'dst', ip: string): boolean {
  const len = side === 'src' ? rule.srclen : rule.dstlen;
  return rule[side] === ip && (len === undefined || len === 32);
}
