// `vpcnetctl status`: the node at a glance (pool, ENIs and their addresses, attachments, warnings)
// and the verdict as the exit code: 0 healthy, 1 degraded, 3 down.
import { parseArgs } from 'node:util';
import { pendingSpooled } from '../../spool/depth.ts';
import { DEFAULT_DEL_SPOOL_DIR } from '../../spool/format.ts';
import type { CliEnv } from '../cli-env.ts';
import {
  colourWanted,
  exitCodeOf,
  jsonDocument,
  type Printer,
  printer,
  table,
  type Verdict,
  verdictTone,
} from '../output.ts';
import { viewAgent } from './agent-view.ts';
import { type NodeState, parseNodeState } from './node-state.ts';
import { NODE_TARGET_HELP, NODE_TARGET_OPTIONS, resolveNodeTarget } from './node-target.ts';
import { type Finding, nodeFindings, servingVerdict } from './node-verdict.ts';

export const STATUS_HELP = `Usage: vpcnetctl status [--agent-socket PATH | --lab NAME [--node N]] [--del-spool-dir DIR] [--json]

The node at a glance: its instance, the address pool (total / assigned / cooling / free, and why
it cannot grow if it cannot), its ENIs with their addresses, the trunk ENI and the branch ENIs of
pods with their own security groups, the attachments, and warnings (EC2 errors, failed CNI
operations, EC2 sync differences, recovery, spooled DELs, ...).
${NODE_TARGET_HELP}
  --json               one JSON document: { verdict, agent, findings, node }
  --del-spool-dir DIR  where the plugin spools DELs (default ${DEFAULT_DEL_SPOOL_DIR}), to count the backlog
Exit codes: 0 healthy, 1 degraded (serving, with warnings), 3 down (no agent, or not serving yet),
2 usage error.
`;

export interface StatusReport {
  readonly verdict: Verdict;
  readonly agent: { readonly reachable: boolean; readonly ready: boolean; readonly reason?: string };
  readonly findings: readonly Finding[];
  readonly node?: NodeState;
}

/** The report `status` prints, from what the agent answered (also the support bundle's summary). */
export async function statusReport(socket: string, spoolDir: string, now: number): Promise<StatusReport> {
  const view = await viewAgent(socket);
  if (!view.reachable)
    return { verdict: 'down', agent: { reachable: false, ready: false, reason: view.reason }, findings: [] };
  const parsed = parseNodeState(view.state);
  const depth = parsed.spoolDepth ?? (await pendingSpooled(spoolDir));
  const node = depth === undefined ? parsed : { ...parsed, spoolDepth: depth };
  const findings = nodeFindings(node, now);
  if (!view.ready) {
    const reason = 'the agent answers but does not serve CNI requests yet (rebuilding its state)';
    return { verdict: 'down', agent: { reachable: true, ready: false, reason }, findings, node };
  }
  return { verdict: servingVerdict(findings), agent: { reachable: true, ready: true }, findings, node };
}

function enisTable(node: NodeState, p: Printer): string {
  const owners = new Map(node.attachments.map((a) => [`${a.network}/${a.containerId}/${a.ifName}`, a]));
  const rows = node.enis.map((e) => {
    const assigned = e.addresses.filter((a) => a.kind === 'assigned');
    const cooling = e.addresses.filter((a) => a.kind === 'cooling').length;
    const list = assigned.map((a) => {
      const att = a.owner === undefined ? undefined : owners.get(a.owner);
      return att?.pod === undefined ? a.ip : `${a.ip} (${att.namespace ?? '?'}/${att.pod})`;
    });
    return [
      e.eniId,
      String(e.deviceNumber ?? '?'),
      e.primaryIp ?? '?',
      String(e.addresses.length),
      String(assigned.length),
      String(cooling),
      list.length === 0 ? p.tone('faint', '-') : list.join(', '),
    ];
  });
  return table(['eni', 'device', 'primary ip', 'addresses', 'assigned', 'cooling', 'assigned to'], rows);
}

/** The subnet census: one row per subnet the cluster's agents use, free /28s first. */
function censusLines(node: NodeState, p: Printer): string[] {
  const c = node.census;
  if (c === undefined) return [];
  const who =
    c.role === 'leader' ? 'this agent reads EC2 for the cluster' : `read from the census Lease (${c.role})`;
  const head = `Subnet census: ${who}${c.lastError === undefined ? '' : `; ${p.tone('warn', `last round failed: ${c.lastError}`)}`}`;
  if (c.subnets.length === 0) return [head, '  no subnet censused yet'];
  const rows = c.subnets.map((s) => [
    s.subnetId,
    s.cidr,
    String(s.freePrefixes),
    String(s.freeAddresses),
    s.stale ? p.tone('warn', `${s.takenAt} (stale)`) : s.takenAt,
    s.reservationsKnown ? '' : p.tone('warn', 'reservations unread'),
  ]);
  return [head, table(['subnet', 'cidr', 'free /28s', 'free addresses', 'read at', ''], rows).trimEnd()];
}

/** The trunk ENI and the branch ENIs on it: the pods with their own security groups. */
function trunkLines(node: NodeState): string[] {
  if (node.trunk === undefined && node.branches.length === 0) return [];
  const trunk =
    node.trunk === null || node.trunk === undefined
      ? 'Trunk ENI: none yet (pods with security groups wait for the resource controller to attach one)'
      : `Trunk ENI: ${node.trunk.eniId}${node.trunk.dev === undefined ? '' : ` (link ${node.trunk.dev})`}, ${node.branches.length} branch ENI(s)`;
  if (node.branches.length === 0) return ['', trunk];
  const rows = [...node.branches]
    .sort((a, b) => (a.vlanId ?? 0) - (b.vlanId ?? 0))
    .map((b) => [
      b.eniId,
      String(b.vlanId ?? '?'),
      b.ip ?? '?',
      b.pod === undefined ? '?' : `${b.namespace ?? '?'}/${b.pod}`,
    ]);
  return ['', trunk, table(['branch eni', 'vlan', 'address', 'pod'], rows).trimEnd()];
}

export function renderStatus(r: StatusReport, p: Printer): string {
  const verdict = p.tone(verdictTone(r.verdict), r.verdict.toUpperCase());
  const lines: string[] = [];
  const node = r.node;
  if (node === undefined) return `vpcnet agent: ${verdict}\n  ${r.agent.reason ?? ''}\n`;
  lines.push(`Node ${node.instanceId ?? '?'} (${node.instanceType ?? '?'}): ${verdict}`);
  if (r.agent.reason !== undefined) lines.push(`  ${r.agent.reason}`);
  const { pool } = node;
  const growth = pool.growthBlocked ? p.tone('bad', `blocked: ${pool.growthBlocked.reason}`) : 'can grow';
  lines.push(
    `Pool: ${pool.total} addresses: ${pool.assigned} assigned, ${pool.cooling} cooling, ${pool.available} free; ${growth}`,
  );
  const branchPods = node.attachments.filter((a) => a.branch !== undefined).length;
  const onBranches = branchPods === 0 ? '' : `, ${branchPods} of them on branch ENIs (not in the pool)`;
  lines.push(`Attachments: ${node.attachments.length}${onBranches} (vpcnetctl pods lists them)`);
  lines.push('', enisTable(node, p).trimEnd(), ...trunkLines(node));
  if (node.census !== undefined) lines.push('', ...censusLines(node, p));
  const warnings = r.findings.filter((f) => f.severity === 'warning');
  const notes = r.findings.filter((f) => f.severity === 'note');
  if (warnings.length > 0)
    lines.push('', 'Warnings:', ...warnings.map((w) => `  ${p.tone('warn', '!')} ${w.text}`));
  if (notes.length > 0) lines.push('', 'Notes:', ...notes.map((n) => `  - ${n.text}`));
  return `${lines.join('\n')}\n`;
}

export async function runStatusCommand(argv: string[], env: CliEnv): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...NODE_TARGET_OPTIONS,
      'del-spool-dir': { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    env.out(STATUS_HELP);
    return 0;
  }
  const target = await resolveNodeTarget(values, { delSpoolDir: values['del-spool-dir'] }, env.env);
  const report = await statusReport(target.agentSocket, target.delSpoolDir, Date.now());
  const json = values.json === true;
  env.out(
    json ? jsonDocument(report) : renderStatus(report, printer(colourWanted(env.stdoutIsTty, env.env, json))),
  );
  return exitCodeOf(report.verdict);
}
