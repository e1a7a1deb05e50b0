// What a healthy pod network looks like, as problems found in the kernel's own view of it.
// Pure functions over parsed `ip -j` output, so the wording is the same for every driver.
import {
  MAIN_TABLE,
  POD_GATEWAY,
  type PodNetworkSpec,
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

export function podSideProblems(spec: PodNetworkSpec, view: PodSideView): string[] {
  const { ifName, ip } = spec;
  if (!view.link) return [`pod interface ${ifName} missing in ${spec.netnsPath}`];
  const problems: string[] = [];
  if (!view.link.flags.includes('UP')) problems.push(`pod interface ${ifName} down`);
  if (!view.link.addresses.some((a) => a.family === 'inet' && a.local === ip && a.prefixlen === 32)) {
    problems.push(`address ${ip}/32 missing on ${ifName}`);
  }
  if (!view.gatewayRoutes.some((r) => r.dst === POD_GATEWAY && r.dev === ifName && r.gateway === undefined)) {
    problems.push(`route to ${POD_GATEWAY} dev ${ifName} missing`);
  }
  if (!view.defaultRoutes.some((r) => r.dst === 'default' && r.gateway === POD_GATEWAY && r.dev === ifName)) {
    problems.push(`default route via ${POD_GATEWAY} missing`);
  }
  const neighbour = view.neighbours.find((n) => n.dst === POD_GATEWAY);
  if (!neighbour) problems.push(`neighbour ${POD_GATEWAY} missing`);
  else if (!neighbour.state.includes('PERMANENT')) problems.push(`neighbour ${POD_GATEWAY} not permanent`);
  else if (neighbour.lladdr !== spec.hostMac.toLowerCase()) {
    problems.push(`neighbour ${POD_GATEWAY} points to ${neighbour.lladdr ?? 'nothing'}, not ${spec.hostMac}`);
  }
  return problems;
}

export function hostSideProblems(spec: PodNetworkSpec, view: HostSideView): string[] {
  const { hostVeth, ip } = spec;
  const problems: string[] = [];
  if (!view.link) problems.push(`host veth ${hostVeth} missing`);
  else if (!view.link.flags.includes('UP')) problems.push(`host veth ${hostVeth} down`);
  if (!view.routes.some((r) => r.dst === ip && r.dev === hostVeth)) {
    problems.push(`host route to ${ip} dev ${hostVeth} missing`);
  }
  const hasRule = (priority: number, side: 'src' | 'dst', table: number) =>
    view.rules.some((r) => r.priority === priority && r.table === table && ruleSelects(r, side, ip));
  if (!hasRule(RULE_PRIORITY_TO_POD, 'dst', MAIN_TABLE)) {
    problems.push(`rule to ${ip} lookup main missing`);
  }
  if (spec.routeTable !== MAIN_TABLE && !hasRule(RULE_PRIORITY_FROM_POD, 'src', spec.routeTable)) {
    problems.push(`rule from ${ip} lookup ${spec.routeTable} missing`);
  }
  return problems;
}

/** `elements` undefined: the set itself is missing. */
export function snatProblems(spec: PodNetworkSpec, elements: readonly string[] | undefined): string[] {
  if (!spec.snat) return [];
  if (elements === undefined) return [`snat set missing (element ${spec.ip} cannot be present)`];
  return elements.includes(spec.ip) ? [] : [`snat element ${spec.ip} missing`];
}
