// Adoption of aws-node's pods (docs/design.md, Adopting aws-node's pods). On a start without a
// ledger on a node where aws-node ran, its pods are still up: their veths, addresses, routes and
// rules are in the kernel and their addresses on the node's ENIs. Rather than make every pod
// restart, vpcnet records each live one as an attachment of its own, with the resources found
// (names and MACs as aws-node chose them), so that its DEL, CHECK and the reconcile loop work on it
// like on any other; then it adds what vpcnet's plan has and aws-node's wiring had not (the SNAT
// element), and removes what aws-node made that nothing uses any more (its firewall chains, its
// ENIs' source rules). Runs after the pool was rebuilt from EC2 and before recovery, GC or any ADD.
//
// The checkpoint is a claim, confirmed against the kernel before anything is recorded: a veth
// named as aws-node names the pod's, routing the checkpoint's address, whose peer is in a network
// namespace holding that address with the veth's MAC as its gateway. What does not hold up is
// left to recovery (which holds live pods' addresses from the API) and to GC.
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Dataplane } from '../../dataplane/dataplane.ts';
import { errorText } from '../../infra/error-text.ts';
import type { Logger } from '../../infra/log.ts';
import type { Ledger } from '../../ledger/ledger.ts';
import { type Attachment, type AttachmentKey, attachmentKeyString } from '../../plan/attachment.ts';
import type { Orphan } from '../../plan/kinds/kind.ts';
import { POD_GATEWAY, planRegularPod, RULE_PRIORITY_FROM_POD } from '../../plan/pod-plan.ts';
import { bareDestination, MAIN_TABLE, type NamespaceView, type NodeView } from '../../plan/views.ts';
import type { PodMetadata, PodSource } from '../../pods/watch/pod-source.ts';
import type { AwsNodeAllocation, AwsNodeCheckpoint } from './aws-node-checkpoint.ts';
import { awsNodeHostVethName } from './aws-node-names.ts';

/** The IPv4 pool as adoption reads and holds it. */
export interface AdoptionPool {
  /** The ENI EC2 lists `ip` on, for this node. */
  eniOf(ip: string): string | undefined;
  /** Route table of a pool ENI (MAIN_TABLE for the primary). */
  routeTable(eniId: string): number | undefined;
  /** Holds `ip` for `owner`; false when something else holds it. */
  hold(ip: string, owner: string): boolean;
  /** The secondary ENIs' primary addresses and route tables. */
  eniSourceRules(): readonly { readonly primaryIp: string; readonly routeTable: number }[];
}

export interface AdoptionDeps {
  readonly ledger: Ledger;
  readonly pool: AdoptionPool;
  readonly dataplane: Pick<Dataplane, 'observeNode' | 'observePod' | 'inspect' | 'repair' | 'collect'>;
  readonly pods: PodSource;
  readonly log: Logger;
  readonly now: () => number;
  /** aws-node's host veth prefix (AWS_VPC_K8S_CNI_VETHPREFIX). */
  readonly awsVethPrefix: string;
  /** The network name vpcnet's conflist gives (the runtime's DEL of an adopted pod names it). */
  readonly networkName: string;
  /** The adopted pods' addresses join vpcnet's SNAT set (not with an external SNAT). */
  readonly snat: boolean;
  /** Where the runtime's pod network namespaces are bound (/var/run/netns). */
  readonly netnsDir: string;
  readonly netnsIdentity: (path: string) => Promise<string | undefined>;
  /** Removes aws-node's firewall chains and rules; what it removed and what it could not. */
  readonly removeFirewall: () => Promise<{ removed: readonly string[]; problems: readonly string[] }>;
}

export interface NotAdopted {
  readonly containerId: string;
  readonly pod?: string;
  readonly ip?: string;
  readonly reason: string;
}

export interface AdoptionReport {
  readonly checkpoint: string;
  /** ms since epoch */
  readonly at: number;
  readonly adopted: readonly {
    readonly key: AttachmentKey;
    readonly pod: string;
    readonly ip: string;
    readonly hostVeth: string;
  }[];
  readonly notAdopted: readonly NotAdopted[];
  /** What of aws-node's was removed: firewall chains and rules, ENI source rules. */
  readonly removed: readonly string[];
  /** What could not be removed or completed, with why. */
  readonly problems: readonly string[];
}

/** A pod's namespace found among the runtime's. */
interface FoundNetns {
  readonly path: string;
  readonly view: NamespaceView;
}

async function runtimeNamespaces(d: AdoptionDeps): Promise<FoundNetns[]> {
  let names: string[];
  try {
    names = await readdir(d.netnsDir);
  } catch (err) {
    d.log.warn('adoption: cannot list the runtime’s network namespaces', {
      dir: d.netnsDir,
      error: errorText(err),
    });
    return [];
  }
  const found: FoundNetns[] = [];
  for (const name of names.sort()) {
    const path = join(d.netnsDir, name);
    const view = await d.dataplane.observePod(path);
    if (view.reachable) found.push({ path, view });
  }
  return found;
}

/** The namespace whose `ifName` holds `ip` and whose gateway is answered by `hostMac`. */
function podNamespaceOf(
  namespaces: readonly FoundNetns[],
  ifName: string,
  ip: string,
  hostMac: string,
): { ns: FoundNetns; podMac: string } | undefined {
  for (const ns of namespaces) {
    const link = ns.view.links.find(
      (l) => l.ifname === ifName && l.addresses.some((a) => a.local === ip && a.prefixlen === 32),
    );
    if (link === undefined) continue;
    const gateway = ns.view.neighbours.find((n) => n.dst === POD_GATEWAY && n.dev === ifName);
    if (gateway?.lladdr?.toLowerCase() !== hostMac) continue;
    return { ns, podMac: link.address };
  }
  return undefined;
}

interface Candidate {
  readonly entry: AwsNodeAllocation;
  readonly ip: string;
  readonly namespace: string;
  readonly name: string;
}

/** An entry adoption can take (kernel not asked yet), or why it cannot. */
function candidate(entry: AwsNodeAllocation): Candidate | NotAdopted {
  const base = {
    containerId: entry.containerId,
    ...(entry.namespace && entry.name ? { pod: `${entry.namespace}/${entry.name}` } : {}),
    ...(entry.ipv4 ? { ip: entry.ipv4 } : entry.ipv6 ? { ip: entry.ipv6 } : {}),
  };
  if (entry.ipv4 === undefined)
    return { ...base, reason: 'an IPv6 pod: only IPv4 pods are adopted; restart it' };
  if (entry.interfacesCount > 1)
    return { ...base, reason: `a pod with ${entry.interfacesCount} interfaces: not adopted; restart it` };
  if (entry.namespace === undefined || entry.name === undefined)
    return { ...base, reason: 'the checkpoint does not name the pod, so its host veth cannot be found' };
  return { entry, ip: entry.ipv4, namespace: entry.namespace, name: entry.name };
}

async function podsByName(d: AdoptionDeps): Promise<Map<string, PodMetadata>> {
  if (d.pods.listOnNode === undefined) return new Map();
  try {
    return new Map((await d.pods.listOnNode()).map((p) => [`${p.namespace}/${p.name}`, p]));
  } catch (err) {
    d.log.warn('adoption: cannot list this node’s pods; adopted pods are recorded without their UID', {
      error: errorText(err),
    });
    return new Map();
  }
}

/**
 * Adopts the pods of `checkpoint` that the kernel confirms, commits them to the ledger, completes
 * them and removes aws-node's leftovers. Returns what it did, for the log and the agent's state.
 */
export async function adoptAwsNodePods(
  d: AdoptionDeps,
  checkpointPath: string,
  checkpoint: AwsNodeCheckpoint,
): Promise<AdoptionReport> {
  const at = d.now();
  const node = await d.dataplane.observeNode();
  const namespaces = await runtimeNamespaces(d);
  const apiPods = await podsByName(d);
  const notAdopted: NotAdopted[] = checkpoint.skipped.map((s) => ({
    containerId: `allocations[${s.index}]`,
    reason: `unreadable entry: ${s.reason}`,
  }));
  const adopted: Attachment[] = [];
  for (const entry of checkpoint.allocations) {
    const c = candidate(entry);
    if (!('entry' in c)) {
      notAdopted.push(c);
      continue;
    }
    const att = confirm(d, node, namespaces, c, apiPods.get(`${c.namespace}/${c.name}`), at);
    if ('reason' in att) {
      notAdopted.push(att);
      continue;
    }
    const netnsId = await d.netnsIdentity(att.netns);
    const attachment = netnsId === undefined ? att : { ...att, netnsId };
    if (!d.pool.hold(c.ip, attachmentKeyString(attachment.key))) {
      notAdopted.push({ ...describeCandidate(c), reason: 'another record already holds the address' });
      continue;
    }
    d.ledger.put(attachment);
    adopted.push(attachment);
  }
  // Durable before anything else changes: from here on these pods are vpcnet's.
  await d.ledger.commit();
  const problems: string[] = [];
  for (const att of adopted) {
    try {
      const seen = await d.dataplane.inspect(att.netns, att.resources);
      if (seen.findings.length > 0) await d.dataplane.repair(att.netns, seen.findings, 'adoptPod');
    } catch (err) {
      // The reconcile loop retries; the pod keeps aws-node's wiring meanwhile.
      problems.push(`${att.pod.namespace}/${att.pod.name}: completing its wiring failed: ${errorText(err)}`);
    }
  }
  const removed: string[] = [];
  const eniRules = awsNodeEniRules(node, d.pool.eniSourceRules());
  if (eniRules.length > 0) {
    try {
      await d.dataplane.collect(eniRules);
      removed.push(...eniRules.map((o) => o.description));
    } catch (err) {
      problems.push(`aws-node's ENI rules: ${errorText(err)}`);
    }
  }
  const firewall = await d.removeFirewall();
  removed.push(...firewall.removed);
  problems.push(...firewall.problems);
  const report: AdoptionReport = {
    checkpoint: checkpointPath,
    at,
    adopted: adopted.map((a) => ({
      key: a.key,
      pod: `${a.pod.namespace ?? ''}/${a.pod.name ?? ''}`,
      ip: a.resources.find((r) => r.kind === 'vpcAddress')?.ip ?? '',
      hostVeth: a.resources.find((r) => r.kind === 'veth')?.hostName ?? '',
    })),
    notAdopted,
    removed,
    problems,
  };
  d.log.warn('adopted aws-node’s pods: they are vpcnet’s attachments now', {
    checkpoint: checkpointPath,
    adopted: report.adopted.length,
    notAdopted: notAdopted.map((n) => `${n.pod ?? n.containerId} ${n.ip ?? ''}: ${n.reason}`),
    removed: removed.length,
    problems,
  });
  return report;
}

function describeCandidate(c: Candidate): Omit<NotAdopted, 'reason'> {
  return { containerId: c.entry.containerId, pod: `${c.namespace}/${c.name}`, ip: c.ip };
}

/** The attachment a checkpoint entry is, once the kernel confirms it; or why it is not adopted. */
function confirm(
  d: AdoptionDeps,
  node: NodeView,
  namespaces: readonly FoundNetns[],
  c: Candidate,
  apiPod: PodMetadata | undefined,
  at: number,
): (Attachment & { readonly netns: string }) | NotAdopted {
  const not = (reason: string): NotAdopted => ({ ...describeCandidate(c), reason });
  const key: AttachmentKey = {
    network: d.networkName,
    containerId: c.entry.containerId,
    ifName: c.entry.ifName,
  };
  if (d.ledger.get(key) !== undefined || d.ledger.findByIp(c.ip) !== undefined)
    return not('vpcnet already records this sandbox or its address');
  const hostName = awsNodeHostVethName(d.awsVethPrefix, c.namespace, c.name);
  const hostLink = node.links.find((l) => l.ifname === hostName);
  if (hostLink === undefined) return not(`no host veth ${hostName}: the pod is gone (GC removes its rules)`);
  const routed = node.routes.some(
    (r) => r.table === MAIN_TABLE && r.dev === hostName && bareDestination(r.dst) === c.ip,
  );
  if (!routed) return not(`host veth ${hostName} does not route ${c.ip}`);
  const eniId = d.pool.eniOf(c.ip);
  if (eniId === undefined) return not(`EC2 does not list ${c.ip} on this node's ENIs`);
  const routeTable = d.pool.routeTable(eniId) ?? MAIN_TABLE;
  const hostMac = hostLink.address.toLowerCase();
  const pod = podNamespaceOf(namespaces, c.entry.ifName, c.ip, hostMac);
  if (pod === undefined)
    return not(`no network namespace in ${d.netnsDir} has ${c.entry.ifName} with ${c.ip} behind ${hostName}`);
  const resources = planRegularPod({
    key,
    vethPrefix: d.awsVethPrefix,
    ip: c.ip,
    eniId,
    routeTable,
    mtu: hostLink.mtu,
    snat: d.snat,
    foundVeth: { hostName, hostMac, podMac: pod.podMac.toLowerCase() },
  });
  return {
    key,
    pod: {
      namespace: c.namespace,
      name: c.name,
      ...(apiPod?.uid === undefined ? {} : { uid: apiPod.uid }),
    },
    netns: pod.ns.path,
    createdAt: c.entry.allocatedAt,
    resources,
    adopted: { from: 'aws-node', at },
  };
}

/**
 * aws-node's rule sending what leaves from a secondary ENI's primary address through the ENI's
 * table (added without a priority, so the kernel chose one: 32765 on most nodes). vpcnet's own rule
 * for it is at RULE_PRIORITY_FROM_POD; the other is aws-node's, and nothing adds it again.
 */
export function awsNodeEniRules(
  node: NodeView,
  enis: readonly { readonly primaryIp: string; readonly routeTable: number }[],
): Orphan[] {
  return enis.flatMap(({ primaryIp, routeTable }) =>
    node.rules
      .filter(
        (r) =>
          r.src === primaryIp &&
          (r.srclen === undefined || r.srclen === 32) &&
          r.dst === undefined &&
          r.iif === undefined &&
          r.other === undefined &&
          r.table === routeTable &&
          r.priority !== RULE_PRIORITY_FROM_POD,
      )
      .map((r) => ({
        identity: `aws-node rule ${r.priority} from ${primaryIp} table ${routeTable}`,
        description: `rule ${r.priority} from ${primaryIp} lookup ${routeTable} (aws-node's)`,
        remove: [
          {
            side: 'node' as const,
            op: {
              op: 'ruleDel' as const,
              rule: { priority: r.priority, from: `${primaryIp}/32`, table: routeTable },
            },
          },
        ],
      })),
  );
}
