// What a rejected request must leave as it was on a lab node: the agent's ledger and pool (its
// state over the socket, less the operation counters and memory figures that change with every
// request, or with time) and the node's kernel (links, addresses, routes of every table, rules, vpcnet's nft table).

import { runToSuccess } from '../../src/infra/process.ts';
import { getJson } from '../../src/infra/unix-socket-json.ts';
import type { LabNodeDesc } from '../lab-fixture.ts';

export interface NodeSnapshot {
  readonly state: string;
  readonly kernel: string;
  readonly nft: string;
}

export async function snapshotNode(node: LabNodeDesc): Promise<NodeSnapshot> {
  const [state, kernel, nft] = await Promise.all([
    agentLedger(node),
    runToSuccess(['ip', '-j', '-n', node.netns, '-batch', '-'], {
      stdin: 'link show\naddress show\nroute show table all\nrule show\n',
    }),
    runToSuccess(['nsenter', `--net=/var/run/netns/${node.netns}`, 'nft', 'list', 'table', 'ip', 'vpcnet']),
  ]);
  // One JSON array per command; one member per line, so that a difference reads as one.
  const readable = kernel.stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.stringify(JSON.parse(line), null, 1))
    .join('\n');
  return { state, kernel: readable, nft: nft.stdout };
}

/**
 * Waits until the node's snapshot stops changing (the pool manager growing the pool, addresses
 * finishing duplicate detection) and returns it.
 */
export async function steadySnapshot(node: LabNodeDesc): Promise<NodeSnapshot> {
  let last = await snapshotNode(node);
  let same = 0;
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; ) {
    await new Promise((r) => setTimeout(r, 1000));
    const now = await snapshotNode(node);
    same = snapshotDifference(last, now) === undefined ? same + 1 : 0;
    last = now;
    if (same >= 3) return now;
  }
  throw new Error(`node ${node.netns} did not settle within 60 s`);
}

async function agentLedger(node: LabNodeDesc): Promise<string> {
  const { status, body } = await getJson(node.agentSocket, '/v1/state');
  if (status !== 200) throw new Error(`agent state on ${node.netns}: HTTP ${status}`);
  // Left out: figures that move with time or with every request, not with what a request did
  // (operation counters and the record of failed ones, memory, the EC2 client's token bucket and
  // calls, the dead-pod GC's and the EC2 sync's clocks and pass counts).
  const {
    operations: _ops,
    recentErrors: _failed,
    memory: _mem,
    ec2: _ec2,
    deadPodGc: _gc,
    ...rest
  } = body as Record<string, unknown>;
  const { sync: _sync, ...pool } = (rest.pool ?? {}) as Record<string, unknown>;
  return JSON.stringify({ ...rest, pool }, null, 1);
}

/** The first line where two snapshots differ, with its part's name; undefined when equal. */
export function snapshotDifference(before: NodeSnapshot, after: NodeSnapshot): string | undefined {
  for (const part of ['state', 'kernel', 'nft'] as const) {
    if (before[part] === after[part]) continue;
    const a = before[part].split('\n');
    const b = after[part].split('\n');
    const k = a.findIndex((line, i) => line !== b[i]);
    const at = k < 0 ? a.length : k;
    return `${part} changed at line ${at + 1}:\n  before: ${a[at] ?? '(end)'}\n  after:  ${b[at] ?? '(end)'}`;
  }
  return undefined;
}
