// What the kernel has, read with `ip -json` inside a namespace: the suite compares a plugin's
// result with this, never with the agent's own view of itself.
import { runProcess } from '../../src/infra/process.ts';
import { sh } from '../lab-fixture.ts';

export interface LinkView {
  readonly ifname: string;
  readonly mac: string;
  readonly mtu: number;
  /** IPv4 addresses as CIDRs. */
  readonly ipv4: readonly string[];
}

export interface RouteView {
  readonly dst: string;
  readonly gateway?: string;
  readonly dev?: string;
  readonly metric?: number;
}

export interface RuleView {
  readonly priority: number;
  /** The address or CIDR the rule matches as source ("all" for any); a /32 is a bare address. */
  readonly src?: string;
  readonly dst?: string;
  readonly table: string;
}

interface IpAddrJson {
  ifname: string;
  address?: string;
  mtu: number;
  addr_info?: { family: string; local: string; prefixlen: number }[];
}

export async function links(netns: string): Promise<LinkView[]> {
  const raw = JSON.parse(await sh(['ip', '-n', netns, '-j', 'addr', 'show'])) as IpAddrJson[];
  return raw.map((l) => ({
    ifname: l.ifname,
    mac: l.address ?? '',
    mtu: l.mtu,
    ipv4: (l.addr_info ?? []).filter((a) => a.family === 'inet').map((a) => `${a.local}/${a.prefixlen}`),
  }));
}

export async function link(netns: string, ifname: string): Promise<LinkView | undefined> {
  return (await links(netns)).find((l) => l.ifname === ifname);
}

export async function routes(netns: string, table = 'main'): Promise<RouteView[]> {
  const out = await runProcess(['ip', '-n', netns, '-4', '-j', 'route', 'show', 'table', table]);
  // A table that does not exist yet is empty, not an error.
  if (out.code !== 0) return [];
  return (JSON.parse(out.stdout) as RouteView[]).map((r) => ({
    dst: r.dst,
    ...(r.gateway === undefined ? {} : { gateway: r.gateway }),
    ...(r.dev === undefined ? {} : { dev: r.dev }),
    ...(r.metric === undefined ? {} : { metric: r.metric }),
  }));
}

export async function rules(netns: string): Promise<RuleView[]> {
  const raw = JSON.parse(await sh(['ip', '-n', netns, '-4', '-j', 'rule', 'show'])) as {
    priority: number;
    src?: string;
    srclen?: number;
    dst?: string;
    dstlen?: number;
    table: string;
  }[];
  return raw.map((r) => ({
    priority: r.priority,
    ...(r.src === undefined ? {} : { src: r.srclen === undefined ? r.src : `${r.src}/${r.srclen}` }),
    ...(r.dst === undefined ? {} : { dst: r.dstlen === undefined ? r.dst : `${r.dst}/${r.dstlen}` }),
    table: r.table,
  }));
}

/** The route the pod's kernel would use to reach `ip` from `src`. */
export async function routeGet(
  netns: string,
  ip: string,
  src?: string,
): Promise<{ dev: string; table?: string }> {
  const argv = ['ip', '-n', netns, '-j', 'route', 'get', ip, ...(src === undefined ? [] : ['from', src])];
  const [r] = JSON.parse(await sh(argv)) as { dev: string; table?: string }[];
  if (!r) throw new Error(`ip route get ${ip} in ${netns} answered nothing`);
  return r;
}
