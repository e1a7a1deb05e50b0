// What the kernel shows of vpcnet's pod networks when the ledger cannot say (docs/design.md,
// Recovery): host veths with the agent's prefix, the routes through them, the pod rules at vpcnet's
// priorities and the SNAT set's elements, grouped per pod (per host veth, or per address when the
// veth is gone). Recognised exactly as the reconcile loop's collection recognises its own objects
// (src/plan/kinds), so what recovery holds is what the collection would otherwise have removed.
import { branchRuleOf, podRuleOf, ruleAddress } from '../../plan/kinds/rule.ts';
import type { Resource, RouteResource, RuleResource } from '../../plan/resource.ts';
import { bareDestination, MAIN_TABLE, type NodeView, prefixDestination } from '../../plan/views.ts';

/** The kernel objects found for one pod. */
export interface KernelEvidence {
  /** Its address (from the host route through its veth, or from its rules and SNAT element). */
  readonly ip?: string;
  readonly hostVeth?: string;
  readonly resources: readonly Resource[];
}

interface Group {
  ip?: string;
  hostVeth?: string;
  resources: Resource[];
}

/** The address a host route (IPv4 /32 or IPv6 /128, as ip shows it: no length) leads to. */
const hostAddress = (dst: string): string | undefined => {
  if (dst === 'default') return undefined;
  const bare = bareDestination(dst);
  return bare.includes('/') ? undefined : bare;
};

function routeOf(r: NodeView['routes'][number], dev: string): RouteResource {
  const dst = prefixDestination(r.dst);
  return {
    kind: 'route',
    side: 'node',
    dst,
    dev,
    ...(r.gateway === undefined ? {} : { via: r.gateway }),
    table: r.table,
    ...(r.scope === 'link' ? { scopeLink: true } : {}),
    ...(r.metric === undefined || r.metric === 0 ? {} : { metric: r.metric }),
  };
}

/**
 * Every pod's kernel objects on the node. `protectedAddresses` (the ENIs' primary IPs, whose
 * from-rules are the ENIs' own) are no pod's. `foreignVethPrefix`: another CNI's host veths
 * (aws-node's, on the first start after it) group their pods' objects too, so that a pod of it that
 * was not adopted is held like one of vpcnet's until its veth goes.
 */
export function kernelEvidence(
  node: NodeView,
  vethPrefix: string,
  protectedAddresses: ReadonlySet<string>,
  foreignVethPrefix?: string,
): KernelEvidence[] {
  const byVeth = new Map<string, Group>();
  const byIp = new Map<string, Group>();
  for (const l of node.links) {
    const ours = l.ifname.startsWith(vethPrefix);
    const foreign = foreignVethPrefix !== undefined && l.ifname.startsWith(foreignVethPrefix);
    if (l.kind !== 'veth' || !(ours || foreign)) continue;
    const veth: Resource = {
      kind: 'veth',
      hostName: l.ifname,
      hostMac: l.address,
      podIfName: 'eth0',
      mtu: l.mtu,
    };
    byVeth.set(l.ifname, { hostVeth: l.ifname, resources: [veth] });
  }
  for (const r of node.routes) {
    const group = r.dev === undefined ? undefined : byVeth.get(r.dev);
    if (!group || r.dev === undefined) continue;
    group.resources.push(routeOf(r, r.dev));
    const ip = hostAddress(r.dst);
    if (r.table === MAIN_TABLE && ip !== undefined && r.gateway === undefined && group.ip === undefined) {
      group.ip = ip;
      byIp.set(ip, group);
    }
  }
  const groupFor = (ip: string): Group => {
    let g = byIp.get(ip);
    if (!g) {
      g = { ip, resources: [] };
      byIp.set(ip, g);
    }
    return g;
  };
  for (const rule of node.rules) {
    const branch = branchRuleOf(rule, vethPrefix);
    if (branch?.iif !== undefined) {
      byVeth.get(branch.iif)?.resources.push({ kind: 'rule', ...branch } satisfies RuleResource);
      continue;
    }
    const pod = podRuleOf(rule);
    if (!pod) continue;
    const ip = ruleAddress(pod);
    if (protectedAddresses.has(ip)) continue;
    groupFor(ip).resources.push({ kind: 'rule', ...pod } satisfies RuleResource);
  }
  for (const ip of node.snatElements ?? []) {
    if (!protectedAddresses.has(ip)) groupFor(ip).resources.push({ kind: 'snat', ip });
  }
  const groups = new Set([...byVeth.values(), ...byIp.values()]);
  return [...groups].map((g) => ({
    ...(g.ip === undefined ? {} : { ip: g.ip }),
    ...(g.hostVeth === undefined ? {} : { hostVeth: g.hostVeth }),
    resources: g.resources,
  }));
}
