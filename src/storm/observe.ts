// Reads a lab the way an operator would: the agent's socket, `ip -j` in the node's and the
// sandboxes' namespaces, the emulator's admin state, and ping from a sandbox to the VPC host.

import { runProcess, runToSuccess } from '../infra/process.ts';
import { getJson } from '../infra/unix-socket-json.ts';
import { unixJson } from '../lab/unix-http.ts';
import {
  type AgentView,
  type Ec2View,
  type KernelView,
  parseAddresses,
  parseAgentState,
  parseEc2State,
  parseLinks,
  parseRoutes,
  parseRules,
} from './views.ts';

export interface ObservedLab {
  readonly nodeNetns: string;
  readonly agentSocket: string;
  readonly adminSocket: string;
}

async function ipJson(netns: string, args: readonly string[]): Promise<unknown> {
  return JSON.parse((await runToSuccess(['ip', '-4', '-n', netns, '-j', ...args])).stdout) as unknown;
}

export async function agentHealthy(lab: ObservedLab): Promise<boolean> {
  try {
    return (await getJson(lab.agentSocket, '/v1/healthz', 2000)).status === 200;
  } catch {
    return false;
  }
}

export async function observeAgent(lab: ObservedLab): Promise<AgentView> {
  const { status, body } = await getJson(lab.agentSocket, '/v1/state', 10_000);
  if (status !== 200) throw new Error(`agent state answered HTTP ${status}`);
  return parseAgentState(body);
}

export async function observeKernel(lab: ObservedLab): Promise<KernelView> {
  const [links, routes, rules] = await Promise.all([
    ipJson(lab.nodeNetns, ['link', 'show']),
    ipJson(lab.nodeNetns, ['route', 'show', 'table', 'all']),
    ipJson(lab.nodeNetns, ['rule', 'show']),
  ]);
  return { links: parseLinks(links), routes: parseRoutes(routes), rules: parseRules(rules) };
}

/** The sandbox's IPv4 addresses; none when its namespace is gone. */
export async function sandboxAddresses(netnsName: string): Promise<string[]> {
  const out = await runProcess(['ip', '-n', netnsName, '-j', 'addr', 'show']);
  return out.code === 0 ? parseAddresses(JSON.parse(out.stdout) as unknown) : [];
}

export async function observeEc2(lab: ObservedLab): Promise<Ec2View> {
  return parseEc2State(await unixJson(lab.adminSocket, 'GET', '/admin/state'));
}

/** One ping from the sandbox to `ip` (only ever an address of the lab's own namespaces). */
export async function reaches(netnsName: string, ip: string): Promise<boolean> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const out = await runProcess([
      'ip',
      'netns',
      'exec',
      netnsName,
      'ping',
      '-n',
      '-q',
      '-c',
      '1',
      '-W',
      '2',
      ip,
    ]);
    if (out.code === 0) return true;
  }
  return false;
}
