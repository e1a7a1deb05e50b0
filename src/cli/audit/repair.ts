// `audit --repair --from-report FILE`: acts on a saved report's findings of the classes the
// ledgers prove no pod holds (findings.ts REPAIRABLE), each checked again first, as calicoctl's
// `ipam release --from-report` does:
//   detached-eni     still attached to nothing, still vpcnet's, on no agent's way in or out, and
//                    older than `minAgeMs` (an agent attaches what it just created) → deleted
//   unowned-address  still on the ENI, still in neither the node's pool nor its ledger →
//                    unassigned; the agent is read again after, and an address it took up in the
//                    meantime (its EC2 sync adopts what it finds) is assigned back to the same ENI
// Every other finding is left alone, said so.
import { AwsServiceError } from '../../cloud/ec2-query/service-error.ts';
import { errorText } from '../../infra/error-text.ts';
import { cidrContains, isIpv4, parseCidr, parseIpv4 } from '../../infra/ipv4.ts';
import { carriesVpcnetMark } from '../../ipam/enis/eni-ownership.ts';
import { parseCreatedAtTag } from '../../ipam/enis/eni-tags.ts';
import { enisById } from './audit.ts';
import { type AuditFinding, REPAIRABLE } from './findings.ts';
import type { AgentRead } from './model.ts';
import { type AgentSource, type CountedEc2, readAgents } from './sources.ts';

export interface RepairDeps {
  readonly ec2: CountedEc2;
  readonly agents: () => Promise<AgentSource[]>;
  /** A detached ENI younger than this (by its createdAt tag) may be on its way to an instance. */
  readonly minAgeMs: number;
  /** Agents read at once (default 16). */
  readonly parallel?: number;
  readonly now?: () => number;
}

/** What a repair run reads of the agents: one node afresh, or every agent once per run. */
interface AgentReads {
  node(node: string | undefined): Promise<AgentRead[]>;
  /** Every agent, read the first time it is asked for in the run. */
  everyone(): Promise<AgentRead[]>;
}

function agentReads(deps: RepairDeps): AgentReads {
  const parallel = deps.parallel === undefined ? {} : { parallel: deps.parallel };
  let all: Promise<AgentRead[]> | undefined;
  return {
    node: (node) => readAgents(deps.agents, { ...parallel, only: new Set(node === undefined ? [] : [node]) }),
    everyone: () => {
      all ??= readAgents(deps.agents, parallel);
      return all;
    },
  };
}

export type RepairAction = 'repaired' | 'given back' | 'skipped' | 'failed';

export interface RepairOutcome {
  readonly key: string;
  readonly action: RepairAction;
  readonly detail: string;
}

/** Whether the node's agent has `address` (or, for a /28, any address in it); undefined: unreadable. */
function holds(agents: readonly AgentRead[], node: string | undefined, address: string): boolean | undefined {
  const state = agents.find((a) => a.node === node)?.state;
  if (state === undefined) return undefined;
  const matches = address.includes('/')
    ? (ip: string) => isIpv4(ip) && cidrContains(parseCidr(address), parseIpv4(ip))
    : (ip: string) => ip === address;
  return (
    state.enis.some((e) => e.addresses.some((a) => matches(a.ip))) ||
    state.attachments.some((a) => a.ip !== undefined && matches(a.ip))
  );
}

/** The address as AssignPrivateIpAddresses and UnassignPrivateIpAddresses name it. */
const addressParams = (address: string) =>
  address.includes('/') ? { Ipv4Prefix: [address] } : { PrivateIpAddress: [address] };

async function repairDetached(f: AuditFinding, deps: RepairDeps, reads: AgentReads): Promise<RepairOutcome> {
  const eniId = f.eniId ?? '';
  const [eni] = await enisById(deps.ec2, [eniId]);
  if (eni === undefined) return { key: f.key, action: 'skipped', detail: `${eniId} is gone already` };
  if (eni.status !== 'available')
    return { key: f.key, action: 'skipped', detail: `${eniId} is ${eni.status} now` };
  if (!carriesVpcnetMark({ tags: eni.tags, description: eni.description }))
    return { key: f.key, action: 'skipped', detail: `${eniId} is not vpcnet's` };
  const created = parseCreatedAtTag(eni.tags['node.k8s.amazonaws.com/createdAt']);
  const age = created === undefined ? undefined : (deps.now ?? Date.now)() - created;
  if (age === undefined || age < deps.minAgeMs)
    return {
      key: f.key,
      action: 'skipped',
      detail: `${eniId} is younger than ${deps.minAgeMs / 1000} s (or has no createdAt tag): an agent may be attaching it`,
    };
  // Every agent, in case one is on its way with it (asked after the cheap checks: in a cluster
  // each agent is a kubectl exec).
  if ((await reads.everyone()).some((a) => a.state?.pool.pendingEniIds.includes(eniId)))
    return { key: f.key, action: 'skipped', detail: `an agent is creating or freeing ${eniId}` };
  await deps.ec2.call('DeleteNetworkInterface', { NetworkInterfaceId: eniId });
  return { key: f.key, action: 'repaired', detail: `deleted ${eniId}` };
}

async function repairUnowned(f: AuditFinding, deps: RepairDeps, reads: AgentReads): Promise<RepairOutcome> {
  const eniId = f.eniId ?? '';
  const address = f.address ?? '';
  const [eni] = await enisById(deps.ec2, [eniId]);
  const onEni =
    eni !== undefined &&
    (address.includes('/') ? eni.ipv4Prefixes.includes(address) : eni.secondaryIps.includes(address));
  if (!onEni) return { key: f.key, action: 'skipped', detail: `${address} is no longer on ${eniId}` };
  if (holds(await reads.node(f.node), f.node, address) !== false)
    return {
      key: f.key,
      action: 'skipped',
      detail: `the agent of ${f.node} has ${address} now (or cannot be read)`,
    };
  await deps.ec2.call('UnassignPrivateIpAddresses', { NetworkInterfaceId: eniId, ...addressParams(address) });
  // The agent may have taken it up between the look and the unassign: then it is given back.
  if (holds(await reads.node(f.node), f.node, address) !== false) {
    await deps.ec2.call('AssignPrivateIpAddresses', { NetworkInterfaceId: eniId, ...addressParams(address) });
    return {
      key: f.key,
      action: 'given back',
      detail: `the agent of ${f.node} took up ${address} meanwhile: assigned back to ${eniId}`,
    };
  }
  return { key: f.key, action: 'repaired', detail: `unassigned ${address} from ${eniId}` };
}

export async function repairFromReport(
  findings: readonly AuditFinding[],
  deps: RepairDeps,
): Promise<RepairOutcome[]> {
  const out: RepairOutcome[] = [];
  const reads = agentReads(deps);
  for (const f of findings) {
    if (!REPAIRABLE.has(f.class)) {
      out.push({
        key: f.key,
        action: 'skipped',
        detail: `${f.class} is not repaired by the audit: ${f.fix}`,
      });
      continue;
    }
    try {
      out.push(
        f.class === 'detached-eni'
          ? await repairDetached(f, deps, reads)
          : await repairUnowned(f, deps, reads),
      );
    } catch (err) {
      const code = err instanceof AwsServiceError ? `${err.code}: ` : '';
      out.push({ key: f.key, action: 'failed', detail: `${code}${errorText(err)}` });
    }
  }
  return out;
}
