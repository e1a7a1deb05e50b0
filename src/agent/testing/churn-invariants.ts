// What must hold on a churned node, judged from the outside: the runtime's beliefs, the ledger,
// the fake kernel, the pool and the fake cloud. Each violation is a sentence naming what is wrong.

import {
  type Attachment,
  attachmentHostVeth,
  attachmentIp,
  attachmentKeyString,
} from '../../plan/attachment.ts';
import type { RunningAgent } from '../agent-deps.ts';
import type { Sandbox } from './churn-runtime.ts';
import type { ChurnWorld } from './churn-world.ts';

const keyOf = (id: string) => ({ network: 'vpcnet', containerId: id, ifName: 'eth0' });

function duplicates(pairs: readonly (readonly [string, string])[]): Map<string, string[]> {
  const by = new Map<string, string[]>();
  for (const [k, v] of pairs) by.set(k, [...(by.get(k) ?? []), v]);
  return new Map([...by].filter(([, vs]) => vs.length > 1));
}

/** 1. A live sandbox has its record, its address, its veth with the peer in its own namespace, routes, SNAT. */
function liveIsWhole(w: ChurnWorld, agent: RunningAgent, sb: Sandbox): string[] {
  const att = agent.ledger.get(keyOf(sb.id));
  if (!att) return [`live sandbox ${sb.id} has no ledger record`];
  const out: string[] = [];
  if (att.phase !== undefined) out.push(`live sandbox ${sb.id}: its record is still '${att.phase}'`);
  if (att.netns !== sb.netns)
    out.push(`live sandbox ${sb.id}: its record names netns ${att.netns}, not ${sb.netns}`);
  const ip = attachmentIp(att);
  if (ip === undefined) return [...out, `live sandbox ${sb.id}: its record holds no address`];
  const vethName = attachmentHostVeth(att);
  const veth = w.kernel.namespaces.get('node')?.links.get(vethName);
  if (!veth) return [...out, `live sandbox ${sb.id} (${ip}): host veth ${vethName} is missing`];
  if (veth.peer?.ns !== sb.netns)
    out.push(
      `live sandbox ${sb.id} (${ip}): ${vethName}'s peer is in ${veth.peer?.ns ?? 'no namespace'}, not its own`,
    );
  const inPod = w.kernel.namespaces.get(sb.netns)?.links.get(veth.peer?.name ?? '');
  if (![...(inPod?.addresses ?? [])].some((c) => c.startsWith(`${ip}/`)))
    out.push(`live sandbox ${sb.id}: ${ip} is not on its interface in ${sb.netns}`);
  const route = w.kernel.hostRoute(ip);
  if (route !== vethName)
    out.push(`live sandbox ${sb.id}: host route to ${ip} goes to ${route ?? 'nothing'}, not ${vethName}`);
  if (!w.kernel.snatElements().includes(ip)) out.push(`live sandbox ${sb.id}: ${ip} is not in the SNAT set`);
  return out;
}

/** 2. No address has two holders: in the ledger, the kernel's host routes and pod interfaces, the pool. */
function oneHolderPerAddress(w: ChurnWorld, agent: RunningAgent): string[] {
  const out: string[] = [];
  const records = agent.ledger.list().map((a) => [attachmentIp(a) ?? '?', a.key.containerId] as const);
  for (const [ip, ids] of duplicates(records)) out.push(`ledger: ${ip} is held by ${ids.join(' and ')}`);
  const node = w.kernel.namespaces.get('node');
  const hostRoutes = (node?.routes ?? [])
    .filter((r) => r.table === 254 && r.dst.endsWith('/32') && node?.links.get(r.dev)?.kind === 'veth')
    .map((r) => [r.dst, r.dev] as const);
  for (const [dst, devs] of duplicates(hostRoutes))
    out.push(`kernel: host routes to ${dst} via ${devs.join(' and ')}`);
  const podAddresses = [...w.kernel.namespaces]
    .filter(([name]) => name !== 'node')
    .flatMap(([name, ns]) =>
      [...ns.links.values()].flatMap((l) => [...l.addresses].map((c) => [c, name] as const)),
    );
  for (const [cidr, where] of duplicates(podAddresses))
    out.push(`kernel: ${cidr} is on pods ${where.join(' and ')}`);
  const owners = agent.pool
    .enis()
    .flatMap((e) => [...agent.pool.addresses(e.eniId)])
    .flatMap(([ip, st]) => (st.kind === 'assigned' ? [[st.owner, ip] as const] : []));
  for (const [owner, ips] of duplicates(owners)) out.push(`pool: ${owner} holds ${ips.join(' and ')}`);
  return out;
}

/** 3. What the ledger holds is EC2's, on this instance, and held in the pool (and only that is). */
function ledgerPoolCloudAgree(w: ChurnWorld, agent: RunningAgent): string[] {
  const out: string[] = [];
  const inCloud = new Map(
    w.cloud.attached().flatMap((e) => e.secondaryIps.map((ip) => [ip, e.eniId] as const)),
  );
  const held = new Map<string, Attachment>();
  for (const att of agent.ledger.list()) {
    const ip = attachmentIp(att);
    if (ip === undefined) continue;
    held.set(ip, att);
    const owner = attachmentKeyString(att.key);
    if (!inCloud.has(ip))
      out.push(`${att.key.containerId} holds ${ip}, which EC2 has on no ENI of the instance`);
    const st = agent.pool.state(ip);
    if (st?.kind !== 'assigned' || st.owner !== owner)
      out.push(
        `${att.key.containerId} holds ${ip}, which the pool has as ${st ? JSON.stringify(st) : 'unknown'}`,
      );
  }
  for (const e of agent.pool.enis())
    for (const [ip, st] of agent.pool.addresses(e.eniId))
      if (st.kind === 'assigned' && !held.has(ip))
        out.push(`pool holds ${ip} for ${st.owner}, which no record holds`);
  return out;
}

/** The node's pod objects are exactly what the ledger's records own, and records exist only for live sandboxes. */
function nothingStray(w: ChurnWorld, agent: RunningAgent, sandboxes: readonly Sandbox[]): string[] {
  const out: string[] = [];
  const records = agent.ledger.list();
  const veths = new Set(records.map(attachmentHostVeth));
  for (const v of w.kernel.veths()) if (!veths.has(v)) out.push(`kernel: veth ${v} belongs to no record`);
  const ips = new Set(records.map((a) => attachmentIp(a) ?? ''));
  for (const ip of w.kernel.snatElements())
    if (!ips.has(ip)) out.push(`kernel: SNAT entry ${ip} belongs to no record`);
  // An attached ENI's own `from <primary IP>` rule is the ENI's, not a pod's.
  const eniIps = new Set(w.cloud.attached().map((e) => e.primaryIp));
  for (const r of w.kernel.namespaces.get('node')?.rules ?? []) {
    const ip = (r.priority === 512 || r.priority === 1536 ? (r.to ?? r.from) : undefined)?.split('/')[0];
    if (ip !== undefined && !ips.has(ip) && !eniIps.has(ip))
      out.push(`kernel: rule ${r.priority} for ${ip} belongs to no record`);
  }
  const live = new Set(sandboxes.filter((s) => s.state === 'live').map((s) => s.id));
  for (const a of records)
    if (!live.has(a.key.containerId))
      out.push(
        `ledger holds ${a.key.containerId} (${attachmentIp(a)}), which the runtime deleted or never saw added`,
      );
  return out;
}

/** After every step: invariants 1-3, plus nothing on the node that no live attachment owns. */
export function stepViolations(w: ChurnWorld, sandboxes: readonly Sandbox[]): string[] {
  const agent = w.agent;
  return [
    ...sandboxes.flatMap((sb) => (sb.state === 'live' ? liveIsWhole(w, agent, sb) : [])),
    ...sandboxes.flatMap((sb) =>
      sb.state === 'gone' && agent.ledger.get(keyOf(sb.id))
        ? [`deleted sandbox ${sb.id} is still in the ledger`]
        : [],
    ),
    ...oneHolderPerAddress(w, agent),
    ...ledgerPoolCloudAgree(w, agent),
    ...nothingStray(w, agent, sandboxes),
  ];
}

/** 4a. Right after every pod was deleted and a GC (before any restart could tidy up): nothing of pods left. */
export function residueViolations(w: ChurnWorld): string[] {
  // An attached ENI's own rule (`rule 1536 <its primary IP> <table>`) is not a pod's.
  const eniIps = w.cloud.attached().map((e) => e.primaryIp);
  const out = w.kernel
    .podResidue()
    .filter(
      (r) => !eniIps.some((ip) => r.startsWith('rule ') && (r.includes(` ${ip} `) || r.includes(` ${ip}/`))),
    )
    .map((r) => `left on the node: ${r}`);
  for (const a of w.agent.ledger.list()) out.push(`left in the ledger: ${a.key.containerId}`);
  return out;
}

/** 4b. Once the pool converged: every address EC2 gave the node back in the pool, no ENI adrift. */
export function endViolations(w: ChurnWorld): string[] {
  const agent = w.agent;
  const out = residueViolations(w);
  for (const eni of w.cloud.enis.values())
    if (!eni.attachment) out.push(`EC2: ENI ${eni.eniId} is not attached (leaked)`);
  const pooled = new Set(agent.pool.enis().flatMap((e) => [...agent.pool.addresses(e.eniId).keys()]));
  for (const eni of w.cloud.attached()) {
    for (const ip of eni.secondaryIps) {
      const st = agent.pool.state(ip);
      if (!st) out.push(`EC2 has ${ip} on ${eni.eniId}, but the pool does not know it (leaked address)`);
      else if (st.kind === 'assigned') out.push(`${ip} is still assigned to ${st.owner}`);
      pooled.delete(ip);
    }
  }
  for (const ip of pooled) out.push(`the pool offers ${ip}, which EC2 has on no ENI of the instance`);
  return out;
}
