// `vpcnetctl pods`: one row per attachment the agent records.
import { parseArgs } from 'node:util';
import type { CliEnv } from '../cli-env.ts';
import { age, colourWanted, EXIT_DOWN, jsonDocument, type Printer, printer, table } from '../output.ts';
import { viewAgent } from './agent-view.ts';
import { type AttachmentRow, parseNodeState } from './node-state.ts';
import { NODE_TARGET_HELP, NODE_TARGET_OPTIONS, resolveNodeTarget } from './node-target.ts';

export const PODS_HELP = `Usage: vpcnetctl pods [--agent-socket PATH | --lab NAME [--node N]] [--json]

One row per pod interface the agent records: namespace/pod, container ID (short), interface,
address, ENI (or branch ENI and VLAN for pods with their own security groups), host veth,
phase (ready, or adding while its ADD runs or if it was cut short) and age.
${NODE_TARGET_HELP}
  --json               one JSON document: { attachments: [...] }
Exit codes: 0, 3 when no agent answers, 2 usage error.
`;

/** The ENI column: the ENI the address is on, or the branch ENI and its VLAN. */
function eniCell(a: AttachmentRow): string {
  if (a.branch === undefined) return a.eniId ?? '-';
  return `${a.branch.eniId ?? '?'} (branch, VLAN ${a.branch.vlanId ?? '?'})`;
}

export function podsTable(rows: readonly AttachmentRow[], now: number, p: Printer): string {
  const sorted = [...rows].sort((a, b) =>
    `${a.namespace}/${a.pod}/${a.ifName}`.localeCompare(`${b.namespace}/${b.pod}/${b.ifName}`),
  );
  return table(
    ['pod', 'container', 'if', 'address', 'eni', 'host veth', 'phase', 'age'],
    sorted.map((a) => [
      a.pod === undefined ? p.tone('faint', '(no pod identity)') : `${a.namespace ?? '?'}/${a.pod}`,
      a.containerId.slice(0, 12),
      a.ifName,
      a.ip ?? '-',
      eniCell(a),
      a.hostVeth ?? '-',
      a.phase === 'ready' ? a.phase : p.tone('warn', a.phase),
      a.createdAt === undefined ? '-' : age(a.createdAt, now),
    ]),
  );
}

export async function runPodsCommand(argv: string[], env: CliEnv): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...NODE_TARGET_OPTIONS,
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    env.out(PODS_HELP);
    return 0;
  }
  const view = await viewAgent((await resolveNodeTarget(values, {}, env.env)).agentSocket);
  if (!view.reachable) {
    env.err(`vpcnetctl pods: ${view.reason}\n`);
    return EXIT_DOWN;
  }
  const { attachments } = parseNodeState(view.state);
  const json = values.json === true;
  env.out(
    json
      ? jsonDocument({ attachments })
      : podsTable(attachments, Date.now(), printer(colourWanted(env.stdoutIsTty, env.env, json))),
  );
  return 0;
}
