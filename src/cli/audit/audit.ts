// The audit's run: read the cluster (agents, pods, then EC2's ENIs and subnets of the VPC), find
// candidates (findings.ts); when there are any, wait `interval` and read again (EC2 first, only
// the ENIs the candidates rest on; then agents and pods) and keep the candidates the second read
// finds too. As the agent's EC2 sync, a finding counts only when two reads a stale window apart
// agree: a difference churn makes (an ADD between the reads, a describe that lags) does not.
// EC2 calls: ⌈ENIs/1000⌉ + 1 for the first read (+ ⌈ENIs named/200⌉ for the second).
import type { XmlElement } from '../../cloud/ec2-query/xml-reader.ts';
import { type AuditFinding, findCandidates } from './findings.ts';
import {
  type ClusterRead,
  type Ec2Eni,
  type Ec2Subnet,
  readEc2Eni,
  readEc2Subnet,
  readPod,
} from './model.ts';
import { type AgentSource, type CountedEc2, type KubeGet, listAll, readAgents } from './sources.ts';
import { leaseReservations, type SubnetCapacity, subnetCapacity } from './subnet-capacity.ts';

export interface AuditDeps {
  readonly ec2: CountedEc2;
  readonly kube: KubeGet;
  readonly agents: () => Promise<AgentSource[]>;
  /** NAMESPACE/NAME of the census Lease, whose subnets' CIDR reservations the counts use. */
  readonly censusLease: string;
  /** CLUSTER_NAME; default: the one the agents name (none when they name none). */
  readonly clusterName?: string;
  /** The cluster's VPC; default: the one the agents say they are in. */
  readonly vpcId?: string;
  /** Agents read at once (default 16). */
  readonly parallel?: number;
  /** Between the two reads (at least as long as EC2's describes may lag). */
  readonly intervalMs: number;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly now?: () => number;
}

export interface AuditReport {
  readonly vpcId: string;
  readonly findings: readonly AuditFinding[];
  /** Seen by the first read, not by the second: churn, not counted. */
  readonly unconfirmed: number;
  readonly subnets: readonly SubnetCapacity[];
  /** Why the subnets' counts leave reservations out, when they do for every subnet. */
  readonly censusNote?: string;
  readonly nodes: readonly string[];
  readonly pods: number;
  readonly enis: number;
  /** EC2 calls the run made. */
  readonly ec2Calls: number;
  readonly reads: 1 | 2;
  readonly ms: number;
}

const ENIS_PER_PAGE = 1000;
const IDS_PER_FILTER = 200;

async function allPages(
  ec2: CountedEc2,
  action: string,
  params: Record<string, unknown>,
  set: string,
): Promise<XmlElement[]> {
  const items: XmlElement[] = [];
  let token: string | undefined;
  do {
    const reply = await ec2.call(action, {
      ...(params as object),
      ...(token === undefined ? {} : { NextToken: token }),
    });
    items.push(...reply.items(set));
    const next = reply.string('nextToken');
    token = next === undefined || next === '' ? undefined : next;
  } while (token !== undefined);
  return items;
}

export async function vpcEnis(ec2: CountedEc2, vpcId: string): Promise<Ec2Eni[]> {
  const items = await allPages(
    ec2,
    'DescribeNetworkInterfaces',
    { Filter: [{ Name: 'vpc-id', Value: [vpcId] }], MaxResults: ENIS_PER_PAGE },
    'networkInterfaceSet',
  );
  return items.map(readEc2Eni);
}

export async function enisById(ec2: CountedEc2, ids: readonly string[]): Promise<Ec2Eni[]> {
  const out: Ec2Eni[] = [];
  for (let i = 0; i < ids.length; i += IDS_PER_FILTER) {
    const chunk = ids.slice(i, i + IDS_PER_FILTER);
    // A filter, not NetworkInterfaceId.N: an ENI deleted since is left out instead of failing the call.
    const items = await allPages(
      ec2,
      'DescribeNetworkInterfaces',
      { Filter: [{ Name: 'network-interface-id', Value: chunk }] },
      'networkInterfaceSet',
    );
    out.push(...items.map(readEc2Eni));
  }
  return out;
}

async function vpcSubnets(ec2: CountedEc2, vpcId: string): Promise<Ec2Subnet[]> {
  return (
    await allPages(ec2, 'DescribeSubnets', { Filter: [{ Name: 'vpc-id', Value: [vpcId] }] }, 'subnetSet')
  ).map(readEc2Subnet);
}

async function readPods(kube: KubeGet) {
  return (await listAll(kube, '/api/v1/pods')).map(readPod);
}

/** The ENIs a candidate's second look must see afresh: its own, and all of its node's when an address went missing. */
function enisToReread(candidates: readonly AuditFinding[], first: ClusterRead): string[] {
  const ids = new Set<string>();
  for (const c of candidates) {
    for (const e of c.enis) ids.add(e);
    if (c.class === 'held-address-missing' && c.node !== undefined) {
      const instance = first.agents.find((a) => a.node === c.node)?.state?.instanceId;
      for (const e of first.enis)
        if (e.instanceId !== undefined && e.instanceId === instance) ids.add(e.eniId);
    }
  }
  return [...ids].sort();
}

/** The CLUSTER_NAME the agents name; agents that disagree leave the audit unable to tell. */
function clusterNameOf(
  agents: readonly { readonly node: string; readonly state?: { readonly clusterName?: string } }[],
) {
  const names = new Set(
    agents.flatMap((a) => (a.state?.clusterName === undefined ? [] : [a.state.clusterName])),
  );
  if (names.size > 1)
    throw new Error(
      `the agents name different CLUSTER_NAMEs (${[...names].sort().join(', ')}): give --cluster-name`,
    );
  return [...names][0];
}

export async function runAudit(deps: AuditDeps): Promise<AuditReport> {
  const now = deps.now ?? Date.now;
  const started = now();
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const reading = deps.parallel === undefined ? {} : { parallel: deps.parallel };
  const agents1 = await readAgents(deps.agents, reading);
  const vpcId = deps.vpcId ?? agents1.find((a) => a.state?.vpcId !== undefined)?.state?.vpcId;
  if (vpcId === undefined) {
    throw new Error(
      `no agent says which VPC it is in (${agents1.map((a) => `${a.node}: ${a.error ?? 'an agent from before vpcId'}`).join('; ') || 'no agent found'}): give --vpc-id`,
    );
  }
  const clusterName = deps.clusterName ?? clusterNameOf(agents1);
  const pods1 = await readPods(deps.kube);
  const [enis1, subnets, reservations] = await Promise.all([
    vpcEnis(deps.ec2, vpcId),
    vpcSubnets(deps.ec2, vpcId),
    leaseReservations(deps.kube, deps.censusLease),
  ]);
  const named = clusterName === undefined ? {} : { clusterName };
  const first: ClusterRead = { agents: agents1, pods: pods1, enis: enis1, subnets, ...named };
  const candidates = findCandidates(first);
  const base = {
    vpcId,
    subnets: subnetCapacity(subnets, enis1, reservations.known, started),
    ...(reservations.note === undefined ? {} : { censusNote: reservations.note }),
    nodes: agents1.map((a) => a.node),
    pods: pods1.length,
    enis: enis1.length,
  };
  if (candidates.length === 0) {
    // The findings first: what `--json` readers look for (`{"findings": [...], ...}`).
    return { findings: [], ...base, unconfirmed: 0, ec2Calls: deps.ec2.calls, reads: 1, ms: now() - started };
  }
  await sleep(deps.intervalMs);
  const reread = enisToReread(candidates, first);
  const fresh = reread.length === 0 ? [] : await enisById(deps.ec2, reread);
  const freshIds = new Set(reread);
  const enis2 = [...enis1.filter((e) => !freshIds.has(e.eniId)), ...fresh];
  const agents2 = await readAgents(deps.agents, reading);
  const pods2 = await readPods(deps.kube);
  const second = findCandidates({ agents: agents2, pods: pods2, enis: enis2, subnets, ...named });
  const seenFirst = new Set(candidates.map((c) => c.key));
  const confirmed = second.filter((c) => seenFirst.has(c.key));
  const order = (f: AuditFinding) => (f.severity === 'critical' ? 0 : 1);
  return {
    findings: confirmed.sort((a, b) => order(a) - order(b) || a.key.localeCompare(b.key)),
    ...base,
    unconfirmed: candidates.length - confirmed.length,
    ec2Calls: deps.ec2.calls,
    reads: 2,
    ms: now() - started,
  };
}
