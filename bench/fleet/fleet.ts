// A cluster on one machine, without namespaces: N real agents (fleet-node.ts) in a few worker
// processes against one emulator that throttles as EC2 does for one account; a scheduler stand-in
// rolls P pods out over S seconds, holds them, replaces a share of the nodes mid-run, deletes the
// pods, lets the pools settle, and reports what the fleet cost EC2 and what the pods waited.
import { type ChildProcess, fork } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RunningEmulator, SubnetSpec } from '../../src/emulator/api.ts';
import { limitOf, type ThrottlingSettings } from '../../src/emulator/ec2/request-throttling.ts';
import { startEmulator } from '../../src/emulator/server.ts';
import { seededRandom } from '../../src/emulator/vpc/ids.ts';
import { networkLimits } from '../../src/emulator/vpc/instance-types.ts';
import { type EndEni, type FleetFigures, fleetFigures, type PodRecord } from './figures.ts';
import { type FleetPlan, planFleet } from './plan.ts';
import {
  FLEET_OBJECTS,
  type FleetMode,
  type FromWorker,
  type NodeReport,
  type NodeSpec,
  type ToWorker,
  type WorkerConfig,
} from './protocol.ts';

export interface FleetOptions {
  readonly mode: FleetMode;
  readonly nodes: number;
  readonly pods: number;
  readonly rolloutSeconds: number;
  readonly holdSeconds: number;
  readonly deleteSeconds: number;
  readonly settleSeconds: number;
  readonly churn: number;
  readonly seed: number;
  readonly workers: number;
  readonly instanceType: string;
  readonly agentEnv: Readonly<Record<string, string>>;
  /** Nodes started per second before the rollout (EC2's describe buckets refill at 20/s). */
  readonly startRate: number;
  /** Nodes start with their warm pool already assigned, as a running cluster's do (the churned ones start cold). */
  readonly prewarm: boolean;
  /** vpcnet mode: the agents share the cluster's EC2 throttle Lease (default true). */
  readonly fleetLease?: boolean;
  /** Seconds after the rollout's start at which EC2's limits are halved (mid-run), if at all. */
  readonly halveAtSeconds?: number;
  /** Progress lines (stderr). */
  readonly progress: (line: string) => void;
}

export interface FleetRun extends FleetFigures {
  readonly mode: FleetMode;
  readonly nodes: number;
  readonly pods: number;
  readonly rolloutSeconds: number;
  readonly seed: number;
  /** How long the nodes took to start (before the rollout), s. */
  readonly startupSeconds: number;
  /** The worst lag of the scheduler's timers (how far behind real time the machine ran), ms. */
  readonly schedulerLagMs: number;
  readonly agentErrors: number;
  /** Agents that exited at start and were started again after the kubelet's backoff. */
  readonly agentRestarts: number;
  readonly addErrors: Readonly<Record<string, number>>;
}

const REGION = 'us-west-2';
const ZONE = 'us-west-2a';
/** Nodes spread over subnets of 65,536 addresses each. */
const SUBNETS: readonly SubnetSpec[] = Array.from({ length: 16 }, (_, i) => ({
  subnetId: `subnet-fleet${String(i).padStart(2, '0')}`,
  cidr: `10.${i}.0.0/16`,
  availabilityZone: ZONE,
}));

interface Worker {
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
}

export async function runFleet(o: FleetOptions): Promise<FleetRun> {
  const plan = planFleet(o);
  const root = await mkdtemp(join(tmpdir(), `vpcnet-fleet-${o.mode}-`));
  const emulator = await startEmulator({
    vpc: { vpcId: 'vpc-0fleet', cidr: '10.0.0.0/8', region: REGION, subnets: SUBNETS },
    listen: [{ host: '127.0.0.1', port: 0 }],
    random: seededRandom(o.seed),
  });
  const url = emulator.urls[0] ?? '';
  const run = new Run(o, plan, emulator, url, root);
  try {
    return await run.execute();
  } finally {
    await run.close();
    await emulator.close();
    await rm(root, { recursive: true, force: true });
  }
}

class Run {
  readonly #o: FleetOptions;
  readonly #plan: FleetPlan;
  readonly #emulator: RunningEmulator;
  readonly #url: string;
  readonly #root: string;
  readonly #workers: Worker[] = [];
  /** node slot → its current node (a replacement gets a new instance, name and worker index). */
  readonly #nodes = new Map<number, NodeSpec>();
  readonly #running = new Set<string>();
  #nextNodeId = 0;
  readonly #pending = new Map<string, (m: FromWorker) => void>();
  /** Every pod start (a pod rescheduled onto a replacement node starts again): one record each. */
  readonly #starts: PodRecord[] = [];
  readonly #addErrors = new Map<string, number>();
  #lagMs = 0;
  #agentRestarts = 0;
  /** Slots whose node is being replaced: resolved once the new node serves. */
  readonly #replacing = new Map<number, Promise<void>>();
  readonly #deletedPods = new Set<string>();

  constructor(o: FleetOptions, plan: FleetPlan, emulator: RunningEmulator, url: string, root: string) {
    this.#o = o;
    this.#plan = plan;
    this.#emulator = emulator;
    this.#url = url;
    this.#root = root;
  }

  async execute(): Promise<FleetRun> {
    const o = this.#o;
    await this.#spawnWorkers();
    if (this.#fleetLease()) await this.#createDaemonSet();
    const startedAt = Date.now();
    await this.#startNodes();
    const startupSeconds = (Date.now() - startedAt) / 1000;
    o.progress(
      `${o.mode}: ${o.nodes} nodes serving after ${startupSeconds.toFixed(0)} s; rolling out ${o.pods} pods`,
    );
    await sleep(5000); // the start's calls die down before the measured window opens
    const t0 = Date.now();
    const startSecond = Math.floor(t0 / 1000);
    const halvedAtSecond =
      o.halveAtSeconds === undefined ? undefined : Math.floor((t0 + o.halveAtSeconds * 1000) / 1000);
    await Promise.all([
      this.#schedulePods(t0),
      this.#scheduleChurn(t0),
      o.halveAtSeconds === undefined ? undefined : this.#halveAt(t0 + o.halveAtSeconds * 1000),
      this.#reportProgress(t0),
    ]);
    o.progress(`${o.mode}: pods deleted; letting the pools settle for ${o.settleSeconds} s`);
    await sleep(o.settleSeconds * 1000);
    const reports = await this.#reports();
    const endEnis = await this.#endEnis();
    const seconds = this.#emulator.ec2Rates(startSecond);
    const throttling = (await this.#adminJson('GET', '/admin/throttling')) as {
      settings: ThrottlingSettings;
    };
    const refill: Record<string, number> = {};
    for (const s of seconds)
      for (const a of Object.keys(s.byAction))
        refill[a] ??= limitOf({ ...throttling.settings, scale: 1 }, a).refillPerSecond;
    const figures = fleetFigures({
      pods: this.#starts,
      seconds,
      startSecond,
      nodes: o.nodes,
      retryingNodes: this.#retrying,
      refillPerSecond: refill,
      endEnis,
      runningInstances: this.#running,
      reports: reports.nodes,
      ...(halvedAtSecond === undefined ? {} : { halvedAtSecond }),
    });
    return {
      mode: o.mode,
      nodes: o.nodes,
      pods: o.pods,
      rolloutSeconds: o.rolloutSeconds,
      seed: o.seed,
      ...figures,
      startupSeconds: Math.round(startupSeconds),
      schedulerLagMs: Math.round(this.#lagMs),
      agentErrors: reports.nodes.reduce((n, r) => n + r.errors, 0),
      agentRestarts: this.#agentRestarts,
      addErrors: Object.fromEntries(this.#addErrors),
    };
  }

  #retrying: Record<string, number> = {};

  async close(): Promise<void> {
    for (const w of this.#workers) this.#send(w, { type: 'exit' });
    // The bound's timer is cancelled once they exit, so it does not hold the process open.
    const bound = new AbortController();
    const timeout = sleep(60_000, undefined, { signal: bound.signal }).catch(() => undefined);
    await Promise.race([Promise.all(this.#workers.map((w) => w.exited)), timeout]);
    bound.abort();
    for (const w of this.#workers) if (w.child.exitCode === null) w.child.kill('SIGKILL');
  }

  /** Upstream has no cluster-wide signal: the upstream-like mode gets none. */
  #fleetLease(): boolean {
    return this.#o.mode === 'vpcnet' && this.#o.fleetLease !== false;
  }

  /** The agents' DaemonSet, its status as the DaemonSet controller keeps it (every node runs one). */
  async #createDaemonSet(): Promise<void> {
    const { namespace, name } = FLEET_OBJECTS.daemonSet;
    await this.#adminJson('POST', `/apis/apps/v1/namespaces/${namespace}/daemonsets`, {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name, namespace },
      spec: {},
      status: { desiredNumberScheduled: this.#o.nodes, numberReady: this.#o.nodes },
    });
  }

  async #spawnWorkers(): Promise<void> {
    const config: WorkerConfig = {
      mode: this.#o.mode,
      emulatorUrl: this.#url,
      region: REGION,
      root: this.#root,
      agentEnv: this.#o.agentEnv,
      seed: this.#o.seed,
      fleetLease: this.#fleetLease(),
    };
    for (let i = 0; i < this.#o.workers; i++) {
      const child = fork(join(import.meta.dirname, 'worker.ts'), [], {
        execArgv: ['--import', 'tsx'],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      const worker = { child, exited };
      this.#workers.push(worker);
      const ready = this.#expect(`ready ${i}`);
      child.on('message', (m: FromWorker) => this.#received(m, i));
      this.#send(worker, { type: 'config', config });
      await ready;
    }
  }

  #received(m: FromWorker, worker: number): void {
    const key = keyOf(m, worker);
    const waiter = key === undefined ? undefined : this.#pending.get(key);
    if (key !== undefined && waiter !== undefined) {
      this.#pending.delete(key);
      waiter(m);
    }
  }

  /** Resolves with the worker's message of this key (keyOf). */
  #expect(key: string): Promise<FromWorker> {
    return new Promise((resolve) => this.#pending.set(key, resolve));
  }

  #send(w: Worker, m: ToWorker): void {
    if (w.child.connected) w.child.send(m);
  }

  #workerOf(slot: number): Worker {
    const w = this.#workers[slot % this.#workers.length];
    if (w === undefined) throw new Error('no worker');
    return w;
  }

  async #startNodes(): Promise<void> {
    const o = this.#o;
    const gapMs = 1000 / o.startRate;
    const starting: Promise<void>[] = [];
    for (let slot = 0; slot < o.nodes; slot++) {
      const due = slot * gapMs;
      starting.push(sleep(due).then(() => this.#startNode(slot, o.prewarm)));
    }
    await Promise.all(starting);
  }

  async #startNode(slot: number, prewarm: boolean): Promise<void> {
    const id = this.#nextNodeId++;
    const imdsSource = `127.${100 + Math.floor(id / 62_500)}.${Math.floor(id / 250) % 250}.${(id % 250) + 1}`;
    const subnet = SUBNETS[slot % SUBNETS.length];
    if (subnet === undefined) throw new Error('no subnet');
    const name = `fleet-node-${id}`;
    const launched = await this.#emulator.launchInstance({
      instanceType: this.#o.instanceType,
      subnetId: subnet.subnetId,
      imdsSourceAddress: imdsSource,
      nodeName: name,
    });
    const warm = prewarm ? warmAddresses(this.#o.instanceType, this.#o.agentEnv) : 0;
    if (warm > 0)
      await this.#adminJson('POST', `/admin/enis/${launched.primaryEni.eniId}/addresses`, {
        secondaryIpCount: warm,
      });
    const spec: NodeSpec = { index: id, name, instanceId: launched.instanceId, imdsSource };
    this.#nodes.set(slot, spec);
    this.#running.add(launched.instanceId);
    const answer = this.#expect(`node ${id}`);
    this.#send(this.#workerOf(slot), { type: 'start', node: spec });
    const m = await answer;
    if (m.type === 'startFailed') throw new Error(`node ${name} did not start: ${m.error}`);
    if (m.type === 'started') this.#agentRestarts += m.restarts;
  }

  /** Every pod created at its time on its node's worker, and deleted at its time. */
  async #schedulePods(t0: number): Promise<void> {
    const runs = this.#plan.pods.map(async (p) => {
      await this.#at(t0 + p.createAtMs);
      const started = this.#addPod(p.node, p.name);
      await this.#at(t0 + p.deleteAtMs);
      await started;
      this.#deletedPods.add(p.name);
      await this.#delPod(p.node, p.name);
    });
    await Promise.all(runs);
  }

  async #addPod(slot: number, pod: string): Promise<void> {
    const spec = this.#nodes.get(slot);
    if (spec === undefined) return;
    const answer = this.#expect(`pod ${pod}`);
    this.#send(this.#workerOf(slot), { type: 'add', node: spec.index, pod });
    const m = await answer;
    if (m.type === 'podStarted')
      this.#starts.push({ name: pod, startMs: m.ms, failedAttempts: m.failedAttempts });
    else if (m.type === 'podGaveUp') this.#starts.push({ name: pod, failedAttempts: m.failedAttempts });
  }

  async #delPod(slot: number, pod: string): Promise<void> {
    // A pod deleted while its node is being replaced is deleted where it was rescheduled.
    await this.#replacing.get(slot);
    const spec = this.#nodes.get(slot);
    if (spec === undefined) return;
    const answer = this.#expect(`deleted ${pod}`);
    this.#send(this.#workerOf(slot), { type: 'del', node: spec.index, pod });
    const m = await answer;
    if (m.type === 'podDeleted' && !m.ok) this.#o.progress(`DEL of ${pod} failed: ${m.error ?? ''}`);
  }

  /**
   * Mid-hold, each churned node is drained (its pods deleted), its agent stopped, its instance
   * terminated (EC2 deletes the ENIs marked DeleteOnTermination), and a new node takes its place
   * cold; its pods are created again there (a new start each).
   */
  async #scheduleChurn(t0: number): Promise<void> {
    const { churnNodes, churnAtMs, pods } = this.#plan;
    if (churnNodes.length === 0) return;
    await this.#at(t0 + churnAtMs);
    this.#o.progress(`${this.#o.mode}: replacing ${churnNodes.length} nodes`);
    await Promise.all(
      churnNodes.map(async (slot) => {
        const old = this.#nodes.get(slot);
        if (old === undefined) return;
        const onNode = pods.filter((p) => p.node === slot);
        await Promise.all(onNode.map((p) => this.#delPod(slot, p.name)));
        let replaced = () => {};
        this.#replacing.set(
          slot,
          new Promise<void>((resolve) => {
            replaced = resolve;
          }),
        );
        const stopped = this.#expect(`stopped ${old.index}`);
        this.#send(this.#workerOf(slot), { type: 'stop', node: old.index });
        await stopped;
        await this.#emulator.terminateInstance(old.instanceId);
        this.#running.delete(old.instanceId);
        this.#nodes.delete(slot);
        let readds: Promise<void>[] = [];
        try {
          await this.#startNode(slot, false);
          // Each pod starts anew there, timed from now (unless already deleted); the messages go
          // before any delete that waited for the replacement, so the worker sees add, then del.
          readds = onNode
            .filter((p) => !this.#deletedPods.has(p.name))
            .map((p) => this.#addPod(slot, p.name));
        } finally {
          this.#replacing.delete(slot);
          replaced();
        }
        await Promise.all(readds);
      }),
    );
  }

  async #halveAt(at: number): Promise<void> {
    await this.#at(at);
    this.#emulator.setThrottling({ scale: 0.5 });
    this.#o.progress(`${this.#o.mode}: EC2's limits halved`);
  }

  async #reportProgress(t0: number): Promise<void> {
    for (let s = 10; s * 1000 < this.#plan.endMs; s += 10) {
      await this.#at(t0 + s * 1000);
      const recent = this.#emulator.ec2Rates(Math.floor(Date.now() / 1000) - 10);
      const calls = recent.reduce((n, r) => n + r.calls, 0);
      const throttled = recent.reduce((n, r) => n + r.throttled, 0);
      const started = this.#starts.filter((p) => p.startMs !== undefined).length;
      this.#o.progress(
        `${this.#o.mode} t=${s}s: ${started} pods started; EC2 ${(calls / 10).toFixed(1)} calls/s, ${throttled} throttled in 10 s; lag ${Math.round(this.#lagMs)} ms`,
      );
    }
  }

  async #at(when: number): Promise<void> {
    const wait = when - Date.now();
    if (wait > 0) await sleep(wait);
    this.#lagMs = Math.max(this.#lagMs, Date.now() - when);
  }

  async #reports(): Promise<{ nodes: NodeReport[] }> {
    const nodes: NodeReport[] = [];
    const retrying: Record<string, number> = {};
    await Promise.all(
      this.#workers.map(async (w, i) => {
        const answer = this.#expect(`report ${i}`);
        this.#send(w, { type: 'report' });
        const m = await answer;
        if (m.type !== 'report') return;
        nodes.push(...m.nodes);
        for (const [s, n] of Object.entries(m.retryingNodes)) retrying[s] = (retrying[s] ?? 0) + n;
        for (const [e, n] of Object.entries(m.addErrors))
          this.#addErrors.set(e, (this.#addErrors.get(e) ?? 0) + n);
      }),
    );
    this.#retrying = retrying;
    return { nodes };
  }

  async #endEnis(): Promise<EndEni[]> {
    const state = (await this.#adminJson('GET', '/admin/state')) as { enis: EndEni[] };
    return state.enis;
  }

  async #adminJson(method: string, path: string, body?: unknown): Promise<unknown> {
    const res = await fetch(`${this.#url}${path}`, {
      method,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return res.json();
  }
}

/** What a message answers: the key #expect waits on. */
function keyOf(m: FromWorker, worker: number): string | undefined {
  switch (m.type) {
    case 'ready':
      return `ready ${worker}`;
    case 'started':
    case 'startFailed':
      return `node ${m.node}`;
    case 'podStarted':
    case 'podGaveUp':
      return `pod ${m.pod}`;
    case 'podDeleted':
      return `deleted ${m.pod}`;
    case 'stopped':
      return `stopped ${m.node}`;
    case 'report':
      return `report ${worker}`;
  }
}

/**
 * The secondary IPs a node's pool holds once warm on its primary ENI: the IP targets when set,
 * else WARM_ENI_TARGET (default 1) ENIs' worth; none in prefix mode.
 */
export function warmAddresses(instanceType: string, env: Readonly<Record<string, string>>): number {
  const limits = networkLimits(instanceType);
  if (limits === undefined) throw new Error(`unknown instance type ${instanceType}`);
  if (env.ENABLE_PREFIX_DELEGATION === 'true') return 0;
  const perEni = limits.ipsPerEni - 1;
  const warmIp = Number(env.WARM_IP_TARGET ?? 0);
  const minimum = Number(env.MINIMUM_IP_TARGET ?? 0);
  if (warmIp > 0 || minimum > 0) return Math.min(perEni, Math.max(warmIp, minimum));
  return Math.min(perEni, Number(env.WARM_ENI_TARGET ?? 1) * perEni);
}
