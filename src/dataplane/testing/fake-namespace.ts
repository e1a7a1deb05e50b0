// The fake kernel's model of one network namespace, and how it is rendered as the `ip -j` views
// the resource kinds judge.
import type { RuleSpec } from '../../plan/kernel-op.ts';
import {
  bareDestination,
  type IpLink,
  type IpRoute,
  type IpRule,
  type NamespaceView,
  prefixDestination,
} from '../../plan/views.ts';

export interface FakeLink {
  readonly name: string;
  mac: string;
  up: boolean;
  mtu: number;
  readonly kind: string;
  /** CIDRs */
  readonly addresses: Set<string>;
  /** The other end of a veth: its namespace ('node' or a pod path) and name. */
  readonly peer?: { readonly ns: string; readonly name: string };
  readonly parent?: string;
  readonly vlanId?: number;
}

export interface FakeRoute {
  readonly table: number;
  /** "default" or a.b.c.d/n */
  readonly dst: string;
  readonly dev: string;
  readonly via?: string;
  readonly scopeLink?: boolean;
  readonly metric?: number;
}

/** A rule; `other` marks selectors vpcnet never makes (someone else's rule). */
export interface FakeRule extends RuleSpec {
  readonly other?: readonly string[];
}

export interface FakeNeighbour {
  readonly dev: string;
  readonly ip: string;
  lladdr: string;
  permanent: boolean;
}

export interface FakeNamespace {
  readonly links: Map<string, FakeLink>;
  routes: FakeRoute[];
  rules: FakeRule[];
  neighbours: FakeNeighbour[];
}

/** "10.0.0.5" and "10.0.0.5/32" are one host route ("2001:db8::5" and "2001:db8::5/128" too). */
export const norm = prefixDestination;
export const sameRule = (a: FakeRule, b: FakeRule) =>
  a.priority === b.priority &&
  a.table === b.table &&
  a.from === b.from &&
  a.to === b.to &&
  a.iif === b.iif &&
  (a.other ?? []).join() === (b.other ?? []).join();

export function emptyNamespace(): FakeNamespace {
  return { links: new Map(), routes: [], rules: [], neighbours: [] };
}

export function renderView(space: FakeNamespace): NamespaceView {
  const links: IpLink[] = [...space.links.values()].map((l) => ({
    ifname: l.name,
    address: l.mac,
    flags: l.up ? ['UP'] : [],
    mtu: l.mtu,
    addresses: [...l.addresses].map((c) => {
      const [local = '', len = '32'] = c.split('/');
      return { family: local.includes(':') ? 'inet6' : 'inet', local, prefixlen: Number(len) };
    }),
    kind: l.kind,
    ...(l.parent === undefined ? {} : { parent: l.parent }),
    ...(l.vlanId === undefined ? {} : { vlanId: l.vlanId }),
  }));
  const routes: IpRoute[] = space.routes.map((r) => ({
    dst: bareDestination(r.dst),
    dev: r.dev,
    table: r.table,
    ...(r.via === undefined ? {} : { gateway: r.via }),
    ...(r.scopeLink === true ? { scope: 'link' } : {}),
    ...(r.metric === undefined ? {} : { metric: r.metric }),
  }));
  const rules: IpRule[] = space.rules.map((r) => {
    const [src = 'all', srclen] = r.from?.split('/') ?? [];
    const [dst, dstlen] = r.to?.split('/') ?? [];
    return {
      priority: r.priority,
      table: r.table,
      src,
      ...(srclen === undefined || srclen === '32' ? {} : { srclen: Number(srclen) }),
      ...(dst === undefined ? {} : { dst }),
      ...(dstlen === undefined || dstlen === '32' ? {} : { dstlen: Number(dstlen) }),
      ...(r.iif === undefined ? {} : { iif: r.iif }),
      ...(r.other === undefined ? {} : { other: r.other }),
    };
  });
  const neighbours = space.neighbours.map((n) => ({
    dst: n.ip,
    dev: n.dev,
    lladdr: n.lladdr,
    state: [n.permanent ? 'PERMANENT' : 'REACHABLE'],
  }));
  return { links, routes, rules, neighbours };
}
