// The agent end to end in-process, for tests: a real ledger file in a temp dir, the real pool and
// pool manager, a fake cloud and a fake kernel. Temp dirs go when the test file ends.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { type AgentConfig, agentConfigFromEnv } from '../../config/agent-config.ts';
import { Dataplane } from '../../dataplane/dataplane.ts';
import { FakeKernel } from '../../dataplane/testing/fake-kernel.ts';
import { silentLogger } from '../../infra/log.ts';
import { FakeCloud, type FakeCloudOptions } from '../../ipam/testing/fake-cloud.ts';
import { noPodSource } from '../../pods/watch/pod-source.ts';
import { startAgent } from '../agent.ts';
import type { AgentDeps, RunningAgent } from '../agent-deps.ts';

export interface AgentWorld {
  dir: string;
  /** The agent's configuration (its socket, state dir) from agentEnv. */
  config: AgentConfig;
  cloud: FakeCloud;
  dataplane: Dataplane;
  kernel: FakeKernel;
  /** Files standing in for pod network namespaces (the agent checks CNI_NETNS exists). */
  netns(name: string): Promise<string>;
  /**
   * Starts the agent with the deps a test brings (a Kubernetes API, a monotonic clock); `now`
   * replaces its clock (Date.now). Its pod namespaces are files, so it takes any existing path for
   * one unless given `notANetworkNamespace` (the real check).
   */
  start(extra?: WorldExtras): Promise<RunningAgent>;
}

/** `dataplane` replaces the world's (e.g. one over a held or gated wrapper of `kernel`). */
export type WorldExtras = Partial<
  Pick<
    AgentDeps,
    | 'podPresence'
    | 'monotonicNow'
    | 'now'
    | 'notANetworkNamespace'
    | 'dataplane'
    | 'runtimeNetnsDir'
    | 'podIpAnnotations'
  >
>;

export interface AgentWorlds {
  /**
   * A one-ENI node (12 addresses, 11 free) whose agent restarts on the same state dir; `cloud`
   * replaces that node's fake cloud options (e.g. a dual-stack subnet).
   */
  world(extraEnv?: Record<string, string>, cloud?: FakeCloudOptions): Promise<AgentWorld>;
  /** A temp dir removed when the test file ends. */
  tempDir(): Promise<string>;
}

/** The agent's paths inside `dir`, its node name, and `extraEnv` on top. */
export function agentEnv(dir: string, extraEnv: Record<string, string>): Record<string, string> {
  return {
    VPCNET_AGENT_SOCKET: join(dir, 'agent.sock'),
    VPCNET_STATE_DIR: join(dir, 'state'),
    VPCNET_DEL_SPOOL_DIR: join(dir, 'state', 'del-spool'),
    VPCNET_NODE_NAME: 'node1',
    // Never this machine's /var/run/aws-node: a test that adopts writes its own checkpoint here.
    VPCNET_AWS_NODE_CHECKPOINT: join(dir, 'aws-node', 'ipam.json'),
    // In-process agents share the machine's network namespace: no fixed ports unless a test asks.
    DISABLE_METRICS: 'true',
    DISABLE_INTROSPECTION: 'true',
    ...extraEnv,
  };
}

/** Call at the top of a test file: registers the removal of every temp dir the worlds made. */
export function agentWorlds(): AgentWorlds {
  const dirs: string[] = [];
  after(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });
  const tempDir = async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vpcnet-agent-'));
    dirs.push(dir);
    return dir;
  };
  async function world(
    extraEnv: Record<string, string> = {},
    options?: FakeCloudOptions,
  ): Promise<AgentWorld> {
    const dir = await tempDir();
    const cloud = new FakeCloud(
      options ?? { limits: { maxEnis: 1, ipsPerEni: 12 }, primarySecondaryIps: 11 },
    );
    const kernel = new FakeKernel();
    const dataplane = new Dataplane(kernel);
    const config = agentConfigFromEnv(agentEnv(dir, { IP_COOLDOWN_PERIOD: '30', ...extraEnv }));
    return {
      dir,
      config,
      cloud,
      dataplane,
      kernel,
      async netns(name) {
        const p = join(dir, `netns-${name}`);
        await writeFile(p, '');
        return p;
      },
      start: (extra = {}) =>
        startAgent({
          ...extra,
          config,
          targets: config.targets,
          cloud,
          dataplane: extra.dataplane ?? dataplane,
          pods: noPodSource,
          log: silentLogger,
          now: extra.now ?? Date.now,
          notANetworkNamespace: extra.notANetworkNamespace ?? (async () => undefined),
          poolIntervalMs: 60_000,
        }),
    };
  }
  return { world, tempDir };
}

/** Polls `done` until it holds or `timeoutMs` passed; the caller asserts afterwards. */
export async function until(done: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}
