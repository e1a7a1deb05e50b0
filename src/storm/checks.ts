// The storm's invariants, as pure functions of what it observed (views.ts). Each returns the
// violations it finds, one line each, naming the sandbox, address, ENI or kernel object at fault.
import { NODE_PORT_RULE_PRIORITY } from '../dataplane/ip-cli/node-port.ts';
import type { AgentView, Ec2View, KernelRoute, KernelRule, KernelView, OwnedResource } from './views.ts';

/** A sandbox the runtime believes is running, with what the storm saw inside its namespace. */
export interface LiveSandbox {
  readonly pod: string;
  readonly containerId: string;
  readonly netnsName: string;
  /** The address its ADD returned. */
  readonly ip: string;
  /** IPv4 addresses found in its namespace. */
  readonly addresses: readonly string[];
}

/** Rules every Linux namespace has (local, main, default). */
const SYSTEM_RULE_PRIORITIES = new Set([0, 32766, 32767]);
const SYSTEM_TABLES = new Set([253, 254, 255]);

const hostAddress = (dst: string): string => (dst.endsWith('/32') ? dst.slice(0, -3) : dst);

function routeMatches(r: OwnedResource, k: KernelRoute): boolean {
  return hostAddress(r.dst ?? '') === hostAddress(k.dst) && r.dev === k.dev && (r.table ?? 254) === k.table;
}

function ruleMatches(r: OwnedResource, k: KernelRule): boolean {
  return r.priority === k.priority && r.from === k.from && r.to === k.to && r.table === k.table;
}

const showRoute = (r: { dst?: string; dev?: string; table?: number }): string =>
  `route ${r.dst} dev ${r.dev} table ${r.table ?? 254}`;
const showRule = (r: {
  priority?: number;
  from?: string | undefined;
  to?: string | undefined;
  table?: number;
}): string => `rule ${r.priority}: from ${r.from ?? 'all'} to ${r.to ?? 'all'} lookup ${r.table}`;

/** Node-side kernel objects a resource list records that the kernel lacks. */
function missingInKernel(owner: string, resources: readonly OwnedResource[], kernel: KernelView): string[] {
  const out: string[] = [];
  for (const r of resources) {
    if (r.kind === 'veth' && r.hostName !== undefined && !kernel.links.includes(r.hostName)) {
      out.push(`${owner}: host veth ${r.hostName} is missing on the node`);
    }
    if (r.kind === 'trunkDevice' && r.name !== undefined && !kernel.links.includes(r.name)) {
      out.push(`${owner}: trunk device ${r.name} is missing on the node`);
    }
    if (r.kind === 'route' && r.side === 'node' && !kernel.routes.some((k) => routeMatches(r, k))) {
      out.push(`${owner}: ${showRoute(r)} is missing on the node`);
    }
    if (r.kind === 'rule' && r.side !== 'pod' && !kernel.rules.some((k) => ruleMatches(r, k))) {
      out.push(`${owner}: ${showRule(r)} is missing on the node`);
    }
  }
  return out;
}

/** Check 1: every live sandbox has its attachment, address, devices, routes and rules. */
export function checkLiveSandboxes(
  live: readonly LiveSandbox[],
  agent: AgentView,
  kernel: KernelView,
): string[] {
  const out: string[] = [];
  for (const sb of live) {
    const name = `sandbox ${sb.containerId} of pod ${sb.pod}`;
    const att = agent.attachments.find((a) => a.containerId === sb.containerId);
    if (att === undefined) {
      out.push(`${name} is running but the agent's ledger has no attachment for it`);
      continue;
    }
    if (att.ip !== sb.ip)
      out.push(`${name}: its ADD returned ${sb.ip}, the ledger says ${att.ip ?? 'no address'}`);
    if (!sb.addresses.includes(sb.ip)) {
      out.push(
        `${name}: namespace ${sb.netnsName} lacks its address ${sb.ip} (has ${sb.addresses.join(', ') || 'none'})`,
      );
    }
    out.push(...missingInKernel(name, att.resources, kernel));
    if (att.binding !== undefined) {
      const binding = agent.bindings.find((b) => b.key === att.binding);
      if (binding === undefined) out.push(`${name}: its branch binding ${att.binding} is not in the ledger`);
      else out.push(...missingInKernel(`${name} (binding ${binding.key})`, binding.resources, kernel));
    }
  }
  return out;
}

function duplicates<T>(items: readonly T[], keyOf: (t: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(keyOf(item), [...(groups.get(keyOf(item)) ?? []), item]);
  return new Map([...groups].filter(([, g]) => g.length > 1));
}

/** Check 2: no address is held by two attachments: in the ledger, the kernel, or EC2. */
export function checkSingleHolders(
  agent: AgentView,
  kernel: KernelView,
  ec2: Ec2View,
  vethPrefix: string,
): string[] {
  const out: string[] = [];
  const withIp = agent.attachments.filter((a) => a.ip !== undefined);
  for (const [ip, atts] of duplicates(withIp, (a) => a.ip ?? '')) {
    // The sandboxes of one pod with security groups share its branch ENI's address (one binding).
    const holders = new Set(atts.map((a) => a.binding ?? a.keyString));
    if (holders.size > 1) out.push(`ledger: ${ip} is held by ${atts.map((a) => a.keyString).join(' and ')}`);
  }
  const poolEntries = agent.pool.flatMap((e) =>
    [...e.addresses.keys()].map((ip) => ({ ip, eniId: e.eniId })),
  );
  for (const [ip, entries] of duplicates(poolEntries, (x) => x.ip)) {
    out.push(`pool: ${ip} is in the pool of ${entries.map((x) => x.eniId).join(' and ')}`);
  }
  const podRoutes = kernel.routes.filter((r) => r.dev.startsWith(vethPrefix));
  for (const [dst, routes] of duplicates(podRoutes, (r) => `${hostAddress(r.dst)} table ${r.table}`)) {
    out.push(`kernel: ${dst} is routed to ${routes.map((r) => r.dev).join(' and ')}`);
  }
  const ec2Addresses = ec2.enis.flatMap((e) =>
    [e.primaryIp, ...e.secondaryIps].map((ip) => ({ ip, eniId: e.eniId })),
  );
  for (const [ip, entries] of duplicates(ec2Addresses, (x) => x.ip)) {
    out.push(`EC2: ${ip} is assigned to ${entries.map((x) => x.eniId).join(' and ')}`);
  }
  return out;
}

/** Kernel objects of vpcnet's shapes that no attachment, binding or pool ENI owns. */
function unownedInKernel(agent: AgentView, kernel: KernelView, vethPrefix: string): string[] {
  const owned = [
    ...agent.attachments.flatMap((a) => a.resources),
    ...agent.bindings.flatMap((b) => b.resources),
  ];
  const eniTables = new Set(agent.pool.map((e) => e.routeTable));
  const eniSources = new Set(agent.pool.map((e) => `${e.primaryIp}/32`));
  const out: string[] = [];
  for (const link of kernel.links) {
    const ownedLink = owned.some(
      (r) => (r.kind === 'veth' && r.hostName === link) || (r.kind === 'trunkDevice' && r.name === link),
    );
    if (link.startsWith(vethPrefix) && !ownedLink) out.push(`kernel: link ${link} is owned by no attachment`);
  }
  for (const route of kernel.routes) {
    const podRoute =
      route.dev.startsWith(vethPrefix) || !(SYSTEM_TABLES.has(route.table) || eniTables.has(route.table));
    const ownedRoute = owned.some((r) => r.kind === 'route' && r.side === 'node' && routeMatches(r, route));
    if (podRoute && !ownedRoute) out.push(`kernel: ${showRoute(route)} is owned by no attachment`);
  }
  for (const rule of kernel.rules) {
    if (SYSTEM_RULE_PRIORITIES.has(rule.priority)) continue;
    // NodePort support's one rule is the node's (set up at start), not an attachment's.
    if (rule.priority === NODE_PORT_RULE_PRIORITY && rule.fwmark !== undefined && rule.table === 254)
      continue;
    const eniRule = rule.from !== undefined && eniSources.has(rule.from) && eniTables.has(rule.table);
    const ownedRule = owned.some((r) => r.kind === 'rule' && r.side !== 'pod' && ruleMatches(r, rule));
    if (!eniRule && !ownedRule) out.push(`kernel: ${showRule(rule)} is owned by no attachment or ENI`);
  }
  return out;
}

/** Check 3 (after convergence): ledger, kernel and EC2 agree. */
export function checkAgreement(
  agent: AgentView,
  kernel: KernelView,
  ec2: Ec2View,
  vethPrefix: string,
): string[] {
  const out: string[] = [];
  const enis = new Map(ec2.enis.map((e) => [e.eniId, e]));
  for (const a of agent.attachments) {
    if (a.binding !== undefined || a.ip === undefined || a.eniId === undefined) continue;
    const eni = enis.get(a.eniId);
    if (eni === undefined) out.push(`attachment ${a.keyString}: its ENI ${a.eniId} does not exist in EC2`);
    else if (!eni.secondaryIps.includes(a.ip))
      out.push(`attachment ${a.keyString}: EC2 has no ${a.ip} on ${a.eniId}`);
  }
  for (const b of agent.bindings) {
    if (!ec2.enis.some((e) => e.primaryIp === b.ip))
      out.push(`binding ${b.key}: no ENI in EC2 has its address ${b.ip}`);
  }
  for (const p of agent.pool) {
    const eni = enis.get(p.eniId);
    if (eni === undefined || eni.instanceId !== agent.instanceId) {
      out.push(`pool: ENI ${p.eniId} is not attached to ${agent.instanceId} in EC2`);
      continue;
    }
    for (const ip of p.addresses.keys()) {
      if (!eni.secondaryIps.includes(ip))
        out.push(`pool: ${ip} (${p.addresses.get(ip)}) is not assigned to ${p.eniId} in EC2`);
    }
  }
  for (const eni of ec2.enis) {
    if (eni.instanceId !== agent.instanceId || eni.interfaceType !== 'interface') continue;
    const p = agent.pool.find((x) => x.eniId === eni.eniId);
    if (p === undefined) {
      out.push(`EC2: ENI ${eni.eniId} is attached to ${agent.instanceId} but not in the agent's pool`);
      continue;
    }
    for (const ip of eni.secondaryIps) {
      if (!p.addresses.has(ip))
        out.push(`EC2: ${ip} is assigned to ${eni.eniId} but not in the agent's pool`);
    }
  }
  out.push(...unownedInKernel(agent, kernel, vethPrefix));
  return out;
}

/** This node's ENIs in EC2: attached to it, or tagged or described as created for it. */
function nodeEnis(ec2: Ec2View, instanceId: string) {
  return ec2.enis.filter(
    (e) =>
      e.instanceId === instanceId ||
      Object.values(e.tags).includes(instanceId) ||
      e.description.includes(instanceId),
  );
}

/** Check 4 (all pods deleted, one GC pass): nothing of vpcnet is left, nothing leaked. */
export function checkClean(
  agent: AgentView,
  kernel: KernelView,
  ec2: Ec2View,
  everAssigned: ReadonlySet<string>,
  vethPrefix: string,
): string[] {
  const out: string[] = [];
  for (const a of agent.attachments) out.push(`ledger: attachment ${a.keyString} (${a.ip}) is left`);
  for (const b of agent.bindings) out.push(`ledger: branch binding ${b.key} is left`);
  out.push(...unownedInKernel(agent, kernel, vethPrefix));
  const pooled = new Map(
    agent.pool.flatMap((e) => [...e.addresses].map(([ip, kind]) => [ip, kind] as const)),
  );
  for (const [ip, kind] of pooled) if (kind === 'assigned') out.push(`pool: ${ip} is still assigned`);
  const mine = nodeEnis(ec2, agent.instanceId);
  const onNode = new Set(mine.filter((e) => e.instanceId !== undefined).flatMap((e) => e.secondaryIps));
  for (const ip of everAssigned) {
    if (onNode.has(ip) && !pooled.has(ip))
      out.push(`${ip} is still assigned to the node in EC2 but not in the warm pool`);
  }
  for (const eni of mine) {
    if (eni.instanceId === undefined && eni.interfaceType === 'interface') {
      out.push(`EC2: ENI ${eni.eniId} of this node is left unattached (available)`);
    }
  }
  return out;
}
