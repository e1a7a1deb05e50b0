// `vpcnetctl explain NAMESPACE/POD`: the agent's explanation (GET /v1/explain, src/agent/introspection/explain.ts)
// of why a pod has (no) network, printed in plain words.
import { parseArgs } from 'node:util';
import type {
  AttachmentExplanation,
  PodExplanation,
  ResourceState,
} from '../../agent/introspection/explain.ts';
import type { RecentCniError } from '../../agent/introspection/recent-errors.ts';
import { errorText } from '../../infra/error-text.ts';
import { getJson } from '../../infra/unix-socket-json.ts';
import type { CliEnv } from '../cli-env.ts';
import {
  colourWanted,
  EXIT_DOWN,
  EXIT_USAGE,
  jsonDocument,
  type Printer,
  printer,
  type Tone,
  table,
} from '../output.ts';
import { UsageError } from '../usage-error.ts';
import { NODE_TARGET_HELP, NODE_TARGET_OPTIONS, resolveNodeTarget } from './node-target.ts';

export const EXPLAIN_HELP = `Usage: vpcnetctl explain NAMESPACE/POD [--agent-socket PATH | --lab NAME [--node N]] [--json]
       vpcnetctl explain POD -n NAMESPACE

Why a pod has (or has no) network, in plain words: the agent's record(s) of it, each resource
recorded checked against the kernel (present / missing / different), its ENI as EC2 describes it
now, and its recent failed CNI operations. Read-only: nothing is repaired.
${NODE_TARGET_HELP}
  --json               one JSON document (the agent's explanation)
Exit codes: 0 the pod's recorded network is whole, 1 it is not (or no record), 3 no agent, 2 usage.
`;

const STATE_TONE: Record<ResourceState, Tone> = {
  present: 'good',
  missing: 'bad',
  different: 'warn',
  unchecked: 'faint',
};

function attachmentText(a: AttachmentExplanation, p: Printer): string {
  const head = `Sandbox ${a.containerId} ${a.ifName} (${a.phase}, since ${a.createdAt})`;
  const where = `  address ${a.ip ?? '-'}, host veth ${a.hostVeth ?? '-'}, netns ${a.netns}`;
  const rows = a.resources.map((r) => [
    r.kind,
    r.what,
    p.tone(STATE_TONE[r.state], r.state),
    r.problem ?? '',
  ]);
  const resources = table(['kind', 'resource', 'state', 'detail'], rows)
    .trimEnd()
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n');
  const eni = a.eni === undefined ? [] : [`  EC2: ${a.eni.text}`];
  return [p.tone('strong', head), where, resources, ...eni].join('\n');
}

function errorsText(errors: readonly RecentCniError[]): string {
  if (errors.length === 0) return 'Recent CNI errors: none';
  const rows = errors.map((e) => [
    e.time,
    e.command,
    (e.containerId ?? '-').slice(0, 12),
    String(e.code ?? '-'),
    e.message,
  ]);
  return `Recent CNI errors:\n${table(['time', 'command', 'container', 'code', 'message'], rows).trimEnd()}`;
}

export function renderExplanation(x: PodExplanation, p: Printer): string {
  const parts = [
    p.tone('strong', `${x.namespace}/${x.pod}`),
    ...x.summary.map((s) => `  ${s}`),
    ...x.attachments.map((a) => `\n${attachmentText(a, p)}`),
    '',
    errorsText(x.recentErrors),
  ];
  return `${parts.join('\n')}\n`;
}

/** Whole: at least one record, every one finished, with every resource present. */
export function podNetworkWhole(x: PodExplanation): boolean {
  return (
    x.attachments.length > 0 &&
    x.attachments.every(
      (a) =>
        a.phase === 'ready' &&
        a.resources.every((r) => r.state === 'present') &&
        a.eni?.attached !== false &&
        a.eni?.addressAssigned !== false,
    )
  );
}

/** NAMESPACE/POD, or POD with -n NAMESPACE. */
export function podArgument(positional: readonly string[], namespace: string | undefined) {
  const [arg, ...extra] = positional;
  if (arg === undefined || extra.length > 0) return undefined;
  const slash = arg.indexOf('/');
  if (slash < 0) return namespace ? { namespace, pod: arg } : undefined;
  const [ns, pod] = [arg.slice(0, slash), arg.slice(slash + 1)];
  return ns !== '' && pod !== '' && !pod.includes('/') ? { namespace: ns, pod } : undefined;
}

export async function runExplainCommand(argv: string[], env: CliEnv): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      namespace: { type: 'string', short: 'n' },
      ...NODE_TARGET_OPTIONS,
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    env.out(EXPLAIN_HELP);
    return 0;
  }
  const target = podArgument(positionals, values.namespace);
  if (target === undefined) throw new UsageError('name one pod as NAMESPACE/POD (or POD -n NAMESPACE)');
  const socket = (await resolveNodeTarget(values, {}, env.env)).agentSocket;
  const path = `/v1/explain?namespace=${encodeURIComponent(target.namespace)}&pod=${encodeURIComponent(target.pod)}`;
  let answer: { status: number; body: unknown };
  try {
    answer = await getJson(socket, path, 30_000);
  } catch (err) {
    env.err(`vpcnetctl explain: no agent answers on ${socket}: ${errorText(err)}\n`);
    return EXIT_DOWN;
  }
  if (answer.status !== 200) {
    env.err(`vpcnetctl explain: the agent answered ${answer.status}: ${JSON.stringify(answer.body)}\n`);
    return answer.status === 404 ? EXIT_USAGE : EXIT_DOWN;
  }
  // Our own agent's answer, of the shape explain.ts builds.
  const x = answer.body as PodExplanation;
  const json = values.json === true;
  env.out(
    json ? jsonDocument(x) : renderExplanation(x, printer(colourWanted(env.stdoutIsTty, env.env, json))),
  );
  return podNetworkWhole(x) ? 0 : 1;
}
