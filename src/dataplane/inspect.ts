// What a healthy pod network looks like, as problems found in the kernel's own view of it.
// Pure functions over parsed `ip -j` output, so the wording is the same for every driver.
import {
  type Drift,
  type HostSidePiece,
  MAIN_TABLE,
  POD_GATEWAY,
  type PodNetworkSpec,
  type PodSidePiece,
  RULE_PRIORITY_FROM_POD,
  RULE_PRIORITY_TO_POD,
} from './dataplane.ts';
import { type IpLink, type IpNeighbour, type IpRoute, type IpRule, ruleSelects } from './ip-json.ts';

export interface PodSideView {
  /** The pod interface with its addresses; undefined if it does not exist. */
  readonly link: IpLink | undefined;
  readonly defaultRoutes: readonly IpRoute[];
  readonly gatewayRoutes: readonly IpRoute[];
  readonly neighbours: readonly IpNeighbour[];
}

export interface HostSideView {
  readonly link: IpLink | undefined;
  /** Main-table routes for exactly ip/32. */
  readonly routes: readonly IpRoute[];
  readonly rules: readonly IpRule[];
}

export function podSideDrift(spec: PodNetworkSpec, view: PodSideView): Drift<PodSidePiece>[] {
  const { ifName, ip } = spec;
  if (!view.link)
    return [{ piece: 'interface', problem: `pod interface ${ifName} missing in ${spec.netnsPath}` }];
  const drift: Drift<PodSidePiece>[] = [];
  if (!view.link.flags.includes('UP'))
    drift.push({ piece: 'interfaceUp', problem: `pod interface ${ifName} down` });
  if (!view.link.addresses.some((a) => a.family === 'inet' && a.local === ip && a.prefixlen === 32)) {
    drift.push({ piece: 'address', problem: `address ${ip}/32 missing on ${ifName}` });
  }
  if (!view.gatewayRoutes.some((r) => r.dst === POD_GATEWAY && r.dev === ifName && r.gateway === undefined)) {
    drift.push({ piece: 'gatewayRoute', problem: `route to ${POD_GATEWAY} dev ${ifName} missing` });
  }
  if (!view.defaultRoutes.some((r) => r.dst === 'default' && r.gateway === POD_GATEWAY && r.dev === ifName)) {
    drift.push({ piece: 'defaultRoute', problem: `default route via ${POD_GATEWAY} missing` });
  }
  const neighbour = view.neighbours.find((n) => n.dst === POD_GATEWAY);
  const wrong = (problem: string) => drift.push({ piece: 'neighbour', problem });
  if (!neighbour) wrong(`neighbour ${POD_GATEWAY} missing`);
  else if (!neighbour.state.includes('PERMANENT')) wrong(`neighbour ${POD_GATEWAY} not permanent`);
  else if (neighbour.lladdr !== spec.hostMac.toLowerCase()) {
    wrong(`neighbour ${POD_GATEWAY} points to ${neighbour.lladdr ?? 'nothing'}, not ${spec.hostMac}`);
  }
  return drift;
}

export function podSideProblems(spec: PodNetworkSpec, view: PodSideView): string[] {
  return podSideDrift(spec, view).map((d) => d.problem);
}

export function hostSideDrift(spec: PodNetworkSpec, view: HostSideView): Drift<HostSidePiece>[] {
  const { hostVeth, ip } = spec;
  const drift: Drift<HostSidePiece>[] = [];
  if (!view.link) drift.push({ piece: 'veth', problem: `host veth ${hostVeth} missing` });
  else if (!view.link.flags.includes('UP'))
    drift.push({ piece: 'vethUp', problem: `host veth ${hostVeth} down` });
  if (!view.routes.some((r) => r.dst === ip && r.dev === hostVeth)) {
    drift.push({ piece: 'hostRoute', problem: `host route to ${ip} dev ${hostVeth} missing` });
  }
  const hasRule = (priority: number, side: 'src' | 'dst', table: number) =>
    view.rules.some((r) => r.priority === priority && r.table === table && ruleSelects(r, side, ip));
  if (!hasRule(RULE_PRIORITY_TO_POD, 'dst', MAIN_TABLE)) {
    drift.push({ piece: 'ruleTo', problem: `rule to ${ip} lookup main missing` });
  }
  if (spec.routeTable !== MAIN_TABLE && !hasRule(RULE_PRIORITY_FROM_POD, 'src', spec.routeTable)) {
    drift.push({ piece: 'ruleFrom', problem: `rule from ${ip} lookup ${spec.routeTable} missing` });
  }
  return drift;
}

export function hostSideProblems(spec: PodNetworkSpec, view: HostSideView): string[] {
  return hostSideDrift(spec, view).map((d) => d.problem);
}

/** `elements` undefined: the set itself is missing. */
export function snatDrift(spec: PodNetworkSpec, elements: readonly string[] | undefined): Drift<'snat'>[] {
  if (!spec.snat) return [];
  if (elements === undefined) {
    return [{ piece: 'snat', problem: `snat set missing (element ${spec.ip} cannot be present)` }];
  }
  return elements.includes(spec.ip) ? [] : [{ piece: 'snat', problem: `snat element ${spec.ip} missing` }];
}

export function snatProblems(spec: PodNetworkSpec, elements: readonly string[] | undefined): string[] {
  return snatDrift(spec, elements).map((d) => d.problem);
}
