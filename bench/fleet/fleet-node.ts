// One node of the fleet: the real agent (its pool manager, ledger, cloud driver signing real EC2
// Query API requests over HTTP to the emulator, IMDS from the node's own loopback address) with a
// fake kernel, and a stand-in for the kubelet and container runtime that adds and deletes pods
// through the agent's CNI handler. An ADD that fails is followed by the runtime's DEL of that
// sandbox and, after a backoff, a new sandbox, as the kubelet does (each failure is a
// FailedCreatePodSandBox a user sees).
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startAgent } from '../../src/agent/agent.ts';
import type { RunningAgent } from '../../src/agent/agent-deps.ts';
import { startFleetSignal } from '../../src/agent/ec2-fleet-signal.ts';
import { agentEnv } from '../../src/agent/testing/agent-world.ts';
import { cniRequest } from '../../src/agent/testing/cni-request.ts';
import { createAwsCloud } from '../../src/cloud/aws/create-aws-cloud.ts';
import type { Cloud } from '../../src/cloud/cloud.ts';
import { type Ec2AttemptObserver, LimitedCloud } from '../../src/cloud/limited-cloud.ts';
import { agentConfigFromEnv } from '../../src/config/agent-config.ts';
import { Dataplane } from '../../src/dataplane/dataplane.ts';
import { FakeKernel } from '../../src/dataplane/testing/fake-kernel.ts';
import type { Logger } from '../../src/infra/log.ts';
import { noPodSource } from '../../src/pods/watch/pod-source.ts';
import { withFakeFabric } from './fleet-fabric.ts';
import { FLEET_OBJECTS, type NodeReport, type NodeSpec, type WorkerConfig } from './protocol.ts';
import { withStandardRetries } from './sdk-standard-retry.ts';

/** The kubelet's retry of a pod whose sandbox failed: 1 s, doubling, at most 10 s. */
const SANDBOX_RETRY_BASE_MS = 1000;
const SANDBOX_RETRY_MAX_MS = 10_000;
/** A replaced node's stop cuts its EC2 calls still waiting for a token after this long. */
const STOP_CUT_MS = 10_000;

export interface PodOutcome {
  readonly started: boolean;
  readonly ms: number;
  readonly failedAttempts: number;
  readonly error?: string;
}

interface PodRun {
  cancelled: boolean;
  containerId: string | undefined;
  done: Promise<PodOutcome>;
}

export interface FleetNodeDeps {
  readonly config: WorkerConfig;
  readonly random: () => number;
  /** Every EC2 request of the node, as answered (retries counted by the worker). */
  readonly observe: Ec2AttemptObserver;
  /** A failed ADD's message, for the worker's tally. */
  readonly addFailed: (message: string) => void;
}

export class FleetNode {
  readonly spec: NodeSpec;
  readonly #d: FleetNodeDeps;
  readonly #dir: string;
  #agent: RunningAgent | undefined;
  #limited: LimitedCloud | undefined;
  #fleet: Awaited<ReturnType<typeof startFleetSignal>> | undefined;
  #close: (() => void) | undefined;
  readonly #pods = new Map<string, PodRun>();
  #sandboxes = 0;
  #warnings = 0;
  #errors = 0;
  #lastError: string | undefined;

  constructor(spec: NodeSpec, deps: FleetNodeDeps) {
    this.spec = spec;
    this.#d = deps;
    this.#dir = join(deps.config.root, `node-${spec.index}`);
  }

  async start(): Promise<void> {
    const { config } = this.#d;
    await mkdir(this.#dir, { recursive: true });
    const aws = await createAwsCloud({
      region: config.region,
      ec2Endpoint: config.emulatorUrl,
      imds: { endpoint: config.emulatorUrl, localAddress: this.spec.imdsSource },
      credentials: { accessKeyId: 'AKIDFLEET', secretAccessKey: 'fleet' },
    });
    this.#close = () => aws.close();
    try {
      await this.#startAgent(aws);
    } catch (err) {
      // As a crashed agent's process: nothing of it stays but its state dir.
      this.#limited?.close('the agent exited at start');
      this.#limited = undefined;
      this.#fleet?.stop();
      aws.close();
      throw err;
    }
  }

  async #startAgent(aws: Awaited<ReturnType<typeof createAwsCloud>>): Promise<void> {
    const { config } = this.#d;
    const kernel = new FakeKernel();
    const instance = withFakeFabric(aws, kernel);
    const agentConfig = agentConfigFromEnv(
      agentEnv(this.#dir, { VPCNET_NODE_NAME: this.spec.name, ...config.agentEnv }),
    );
    let cloud: Cloud;
    if (config.mode === 'vpcnet') {
      // One Kubernetes API for the cluster (the emulator's), as vpcnetd wires it with one.
      this.#fleet = config.fleetLease
        ? await startFleetSignal({
            kubeApi: { baseUrl: config.emulatorUrl },
            fleet: FLEET_OBJECTS,
            nodeName: this.spec.name,
            log: this.#log,
            random: this.#d.random,
          })
        : undefined;
      this.#limited = new LimitedCloud({
        inner: instance,
        limit: agentConfig.ec2,
        log: this.#log,
        observe: this.#d.observe,
        random: this.#d.random,
        ...(this.#fleet === undefined ? {} : { fleet: this.#fleet }),
      });
      cloud = this.#limited;
    } else {
      cloud = withStandardRetries(instance, {
        clock: { now: () => performance.now(), sleep: (ms) => sleep(ms) },
        random: this.#d.random,
        observe: this.#d.observe,
      });
    }
    const limited = this.#limited;
    this.#agent = await startAgent({
      config: agentConfig,
      targets: agentConfig.targets,
      cloud,
      ...(limited === undefined ? {} : { ec2Budget: limited, cloudFigures: () => limited.figures() }),
      dataplane: new Dataplane(kernel),
      pods: noPodSource,
      log: this.#log,
      now: Date.now,
      notANetworkNamespace: async () => undefined,
    });
  }

  /** Starts the pod: ADD until one succeeds, or until the pod is deleted. */
  add(pod: string): Promise<PodOutcome> {
    const run: PodRun = {
      cancelled: false,
      containerId: undefined,
      done: Promise.resolve(undefined as never),
    };
    run.done = this.#runPod(pod, run);
    this.#pods.set(pod, run);
    return run.done;
  }

  /** Deletes the pod: its start attempts stop, then the runtime's DEL of its sandbox. */
  async del(pod: string): Promise<void> {
    const run = this.#pods.get(pod);
    if (run === undefined) return;
    run.cancelled = true;
    await run.done;
    this.#pods.delete(pod);
    if (run.containerId !== undefined) await this.#cni('DEL', run.containerId, pod);
  }

  async stop(): Promise<void> {
    for (const run of this.#pods.values()) run.cancelled = true;
    // The agent's graceful stop finishes what it started with EC2 (an ENI being freed is deleted,
    // not left detached); only calls still waiting for a token after a while are cut short.
    const cut = setTimeout(() => this.#limited?.close('the node is being replaced'), STOP_CUT_MS);
    await this.#agent?.stop();
    clearTimeout(cut);
    this.#limited?.close('the node is being replaced');
    this.#fleet?.stop();
    this.#close?.();
    await rm(this.#dir, { recursive: true, force: true, maxRetries: 5 });
  }

  report(): NodeReport {
    const state = this.#agent?.introspect();
    const pool = state?.pool;
    const enis: Record<string, string[]> = {};
    for (const e of pool?.enis ?? []) enis[e.eniId] = Object.keys(e.addresses);
    return {
      index: this.spec.index,
      instanceId: this.spec.instanceId,
      enis,
      pendingEnis: (pool?.pendingEnis ?? []).map((p) => p.eniId),
      assigned: pool?.stats.assigned ?? 0,
      growthBlocked: pool?.growth.blocked ?? null,
      warnings: this.#warnings,
      errors: this.#errors,
      ...(this.#lastError === undefined ? {} : { lastError: this.#lastError }),
    };
  }

  async #runPod(pod: string, run: PodRun): Promise<PodOutcome> {
    const started = performance.now();
    let failed = 0;
    let lastError = '';
    while (!run.cancelled) {
      const containerId = `${pod}-s${++this.#sandboxes}`;
      run.containerId = containerId;
      const answer = await this.#cni('ADD', containerId, pod);
      if (answer.exitCode === 0)
        return { started: true, ms: performance.now() - started, failedAttempts: failed };
      failed++;
      lastError = answer.stdout;
      this.#d.addFailed(errorMessage(answer.stdout));
      // The runtime tears the failed sandbox down, and the kubelet tries a new one later.
      await this.#cni('DEL', containerId, pod);
      run.containerId = undefined;
      await sleep(Math.min(SANDBOX_RETRY_MAX_MS, SANDBOX_RETRY_BASE_MS * 2 ** (failed - 1)));
    }
    return { started: false, ms: performance.now() - started, failedAttempts: failed, error: lastError };
  }

  async #cni(command: 'ADD' | 'DEL', containerId: string, pod: string) {
    const agent = this.#agent;
    if (agent === undefined) throw new Error(`node ${this.spec.name} has no agent`);
    const netns = join(this.#dir, `netns-${containerId}`);
    if (command === 'ADD') await writeFile(netns, '');
    const answer = await agent.cni(cniRequest(command, containerId, netns, pod, `uid-${pod}`));
    if (command === 'DEL') await rm(netns, { force: true });
    return answer;
  }

  readonly #log: Logger = {
    debug() {},
    info() {},
    warn: () => {
      this.#warnings++;
    },
    error: (msg, fields) => {
      this.#errors++;
      this.#lastError = `${msg} ${JSON.stringify(fields ?? {})}`.slice(0, 400);
    },
  };
}

/** The CNI error's msg (what a user sees in the pod's events), from the plugin's stdout. */
function errorMessage(stdout: string): string {
  try {
    const e = JSON.parse(stdout) as { msg?: unknown; code?: unknown };
    return `${String(e.code)}: ${String(e.msg)}`;
  } catch {
    return stdout.slice(0, 200);
  }
}
