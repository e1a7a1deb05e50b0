// What of a pod's namespace the dataplane reads to judge a plan: the links the plan's pod-side
// steps name, the routes of each table they fill through each link, the rules at their priorities.
// A pod with NET_ADMIN can fill its own namespace at will (docs/design.md, Trust boundaries); what
// vpcnet never judges there, it does not read.
import { createSteps } from '../plan/kinds.ts';
import type { Resource } from '../plan/resource.ts';
import type { NamespaceView } from '../plan/views.ts';
import type { PodScope } from './kernel.ts';

export function podScopeOf(resources: readonly Resource[]): PodScope {
  const links = new Set<string>();
  const routes = new Map<string, { table: number; dev: string }>();
  const rulePriorities = new Set<number>();
  for (const { side, op } of resources.flatMap(createSteps)) {
    if (side !== 'pod') continue;
    // Every link a pod-side step names (its checks look the link up by that name).
    if (op.op === 'vethAdd') links.add(op.name);
    if ('dev' in op) links.add(op.dev);
    if (op.op === 'routeAdd') routes.set(`${op.table} ${op.dev}`, { table: op.table, dev: op.dev });
    if (op.op === 'ruleAdd') rulePriorities.add(op.rule.priority);
  }
  return { links: [...links], routes: [...routes.values()], rulePriorities: [...rulePriorities] };
}

/**
 * What of `view` a read within `scope` returns, as the netlink helper reads it (native/
 * dump-scoped.c): the named links with their addresses, the routes of each named table through
 * its link, the rules at the named priorities, the neighbours on the named links. The fake kernel
 * reads this way too, so every judgement the suites test is made on a scoped view.
 */
export function withinScope(view: NamespaceView, scope: PodScope): NamespaceView {
  const links = new Set(scope.links);
  const routes = new Set(scope.routes.map((r) => `${r.table} ${r.dev}`));
  const priorities = new Set(scope.rulePriorities);
  return {
    links: view.links.filter((l) => links.has(l.ifname)),
    routes: view.routes.filter(
      (r) => r.dev !== undefined && links.has(r.dev) && routes.has(`${r.table} ${r.dev}`),
    ),
    rules: view.rules.filter((r) => priorities.has(r.priority)),
    neighbours: view.neighbours.filter((n) => n.dev !== undefined && links.has(n.dev)),
  };
}
