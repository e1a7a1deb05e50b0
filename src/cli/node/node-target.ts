// Which node a node-level command (status, pods, explain, state, health, support-bundle) reads:
// the node it runs on (the agent's socket and dirs at their installed paths, or the paths given),
// or a node of a lab on this machine (`--lab NAME [--node N]`), whose paths follow from the lab's
// layout. A lab node is a network namespace: what reads the kernel enters it.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_AGENT_SOCKET, defaultAgentSocket } from '../../cni/wire.ts';
import { LAB_STATE_ROOT, type LabDescription, labLayout } from '../../lab/layout.ts';
import { DEFAULT_DEL_SPOOL_DIR } from '../../spool/format.ts';
import { UsageError } from '../usage-error.ts';

export const DEFAULT_STATE_DIR = '/var/lib/vpcnet';
export const DEFAULT_CNI_CONF_DIR = '/etc/cni/net.d';

export interface NodeTarget {
  readonly agentSocket: string;
  readonly stateDir: string;
  readonly delSpoolDir: string;
  readonly cniConfDir: string;
  /** The node's network namespace name (a lab node); absent: the namespace this command runs in. */
  readonly netns?: string;
  /** The agent's log file (a lab node's); absent: the command's own default. */
  readonly agentLog?: string;
  /** How the node is named in messages. */
  readonly label: string;
}

/** The options every node-level command takes to say which node (parseArgs specs). */
export const NODE_TARGET_OPTIONS = {
  'agent-socket': { type: 'string' },
  lab: { type: 'string' },
  node: { type: 'string' },
} as const;

export const NODE_TARGET_HELP = `  --agent-socket PATH  the agent's socket (default: VPCNET_AGENT_SOCKET, where the agent
                       listens when it is set, else ${DEFAULT_AGENT_SOCKET})
  --lab NAME           a node of lab NAME on this machine instead (vpcnetctl lab up)
  --node N             with --lab: which node, node1..N or 1..N (default node1)`;

export interface NodeTargetValues {
  readonly 'agent-socket'?: string | undefined;
  readonly lab?: string | undefined;
  readonly node?: string | undefined;
}

/** The labs that are up on this machine (their description is written once they are ready). */
export async function labsUp(): Promise<string[]> {
  const names = await readdir(LAB_STATE_ROOT).catch(() => [] as string[]);
  const up: string[] = [];
  for (const n of names.sort()) {
    const described = await readFile(join(LAB_STATE_ROOT, n, 'lab.json'), 'utf8').then(
      () => true,
      () => false,
    );
    if (described) up.push(n);
  }
  return up;
}

/** The description of lab `name`, or a UsageError naming the labs that are up. */
export async function readLabDescription(name: string): Promise<LabDescription> {
  let layout: ReturnType<typeof labLayout>;
  try {
    layout = labLayout(name, 0);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  let text: string;
  try {
    text = await readFile(layout.files.description, 'utf8');
  } catch {
    const up = await labsUp();
    const others = up.length === 0 ? 'no lab is up' : `labs up: ${up.join(', ')}`;
    throw new UsageError(`lab ${name} is not up (${others}); start it with: vpcnetctl lab up --name ${name}`);
  }
  return JSON.parse(text) as LabDescription;
}

/** `node2` or `2`: the lab node's name, checked against the lab's nodes. */
export function labNodeName(description: LabDescription, node: string | undefined): string {
  const names = description.nodes.map((n) => n.name);
  const wanted = node === undefined ? names[0] : /^\d+$/.test(node) ? `node${node}` : node;
  if (wanted === undefined || !names.includes(wanted)) {
    throw new UsageError(
      `lab ${description.name} has no node ${JSON.stringify(node ?? '')} (its nodes: ${names.join(', ')})`,
    );
  }
  return wanted;
}

/**
 * The node a command reads. `own` are the paths the command was given itself (only without
 * --lab: a lab node's paths are the lab's); `environment` the process's (VPCNET_AGENT_SOCKET).
 */
export async function resolveNodeTarget(
  values: NodeTargetValues,
  own: {
    readonly stateDir?: string | undefined;
    readonly delSpoolDir?: string | undefined;
    readonly cniConfDir?: string | undefined;
  } = {},
  environment: Readonly<Record<string, string | undefined>> = {},
): Promise<NodeTarget> {
  const lab = values.lab;
  if (lab === undefined) {
    if (values.node !== undefined) throw new UsageError('--node picks a node of a lab: add --lab NAME');
    const stateDir = own.stateDir ?? DEFAULT_STATE_DIR;
    const agentSocket = values['agent-socket'] ?? defaultAgentSocket(environment);
    return {
      agentSocket,
      stateDir,
      delSpoolDir:
        own.delSpoolDir ?? (own.stateDir === undefined ? DEFAULT_DEL_SPOOL_DIR : join(stateDir, 'del-spool')),
      cniConfDir: own.cniConfDir ?? DEFAULT_CNI_CONF_DIR,
      label: agentSocket,
    };
  }
  for (const [given, name] of [
    [values['agent-socket'], '--agent-socket'],
    [own.stateDir, '--state-dir'],
    [own.delSpoolDir, '--del-spool-dir'],
    [own.cniConfDir, '--cni-conf-dir'],
  ] as const) {
    if (given !== undefined)
      throw new UsageError(`${name} does not go with --lab (a lab node's paths are the lab's)`);
  }
  const description = await readLabDescription(lab);
  const name = labNodeName(description, values.node);
  const node = labLayout(lab, description.nodes.length).nodes.find((n) => n.name === name);
  if (node === undefined) throw new UsageError(`lab ${lab} has no node ${name}`);
  return {
    agentSocket: node.agentSocket,
    stateDir: node.stateDir,
    delSpoolDir: node.spoolDir,
    cniConfDir: node.cniConfDir,
    netns: node.netns,
    agentLog: node.agentLog,
    label: `${name} of lab ${lab}`,
  };
}
