// An in-process agent (src/agent/testing's world: fake cloud and kernel, real ledger and pool)
// with its EC2 calls through LimitedCloud and both endpoints on ports the kernel picks.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LimitedCloud } from '../../../cloud/limited-cloud.ts';
import { agentConfigFromEnv } from '../../../config/agent-config.ts';
import { Dataplane } from '../../../dataplane/dataplane.ts';
import { FakeKernel } from '../../../dataplane/testing/fake-kernel.ts';
import { silentLogger } from '../../../infra/log.ts';
import { FakeCloud, type FakeCloudOptions } from '../../../ipam/testing/fake-cloud.ts';
import { noPodSource } from '../../../pods/watch/pod-source.ts';
import { startAgent } from '../../agent.ts';
import type { AgentDeps, RunningAgent } from '../../agent-deps.ts';
import { type AgentWorlds, agentEnv } from '../../testing/agent-world.ts';
import { Ec2AttemptFeed } from '../ec2-attempt-feed.ts';

export interface ObservedNode {
  readonly dir: string;
  readonly cloud: FakeCloud;
  readonly config: AgentDeps['config'];
  netns(name: string): Promise<string>;
  /** `extra`: a Kubernetes API's pod presence (the dead-pod GC runs with one). */
  start(
    ports?: { metrics?: number; introspection?: number },
    extra?: Pick<AgentDeps, 'podPresence'>,
  ): Promise<RunningAgent>;
}

/**
 * `extraEnv`: settings on top of the node's (e.g. a short VPCNET_ADD_WAIT_SECONDS); `cloudOptions`:
 * the fake cloud's, on top of one ENI of 12 addresses (e.g. an IPv6 subnet).
 */
export async function observedNode(
  worlds: AgentWorlds,
  extraEnv: Record<string, string> = {},
  cloudOptions: Partial<FakeCloudOptions> = {},
): Promise<ObservedNode> {
  const dir = await worlds.tempDir();
  const cloud = new FakeCloud({
    limits: { maxEnis: 1, ipsPerEni: 12 },
    primarySecondaryIps: 11,
    ...cloudOptions,
  });
  const config = agentConfigFromEnv(agentEnv(dir, { IP_COOLDOWN_PERIOD: '30', ...extraEnv }));
  return {
    dir,
    cloud,
    config,
    async netns(name) {
      const p = join(dir, `netns-${name}`);
      await writeFile(p, '');
      return p;
    },
    async start(ports = {}, extra = {}) {
      const ec2Attempts = new Ec2AttemptFeed();
      const limited = new LimitedCloud({
        inner: cloud,
        limit: { qps: 1000, burst: 1000, maxAttempts: 1 },
        log: silentLogger,
        observe: ec2Attempts.emit,
      });
      const agent = await startAgent({
        ...extra,
        config: {
          ...config,
          metricsPort: ports.metrics ?? 0,
          introspection: { host: '127.0.0.1', port: ports.introspection ?? 0 },
        },
        targets: config.targets,
        cloud: limited,
        cloudFigures: () => limited.figures(),
        ec2Attempts,
        dataplane: new Dataplane(new FakeKernel()),
        pods: noPodSource,
        log: silentLogger,
        now: Date.now,
        notANetworkNamespace: async () => undefined,
        poolIntervalMs: 60_000,
      });
      // As vpcnetd: the budget closes first, so no call waits for a token past the stop.
      const stop = agent.stop.bind(agent);
      return Object.assign(agent, {
        async stop() {
          limited.close();
          await stop();
        },
      });
    },
  };
}

/** GET (or another method) on 127.0.0.1:port. */
export async function httpGet(
  port: number,
  path: string,
  method = 'GET',
): Promise<{ status: number; contentType: string; body: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { method });
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', body: await res.text() };
}
