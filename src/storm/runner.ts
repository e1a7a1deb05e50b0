// Runs a storm plan against a lab: each step's operations, then the cheap checks (live sandboxes,
// single holders, reachability of what the step touched); at the end, with faults off and the
// agent settled, every check, then all pods deleted, one CNI GC, and the leak check.
import { setTimeout as sleep } from 'node:timers/promises';
import { errorText } from '../infra/error-text.ts';
import {
  checkAgreement,
  checkClean,
  checkLiveSandboxes,
  checkSingleHolders,
  type LiveSandbox,
} from './checks.ts';
import {
  agentHealthy,
  type ObservedLab,
  observeAgent,
  observeEc2,
  observeKernel,
  reaches,
  sandboxAddresses,
} from './observe.ts';
import { describeOp, FAULTS_OFF, type PodOp, type StormOp } from './plan.ts';
import type { Sandbox, StormPod, StormRuntime } from './runtime.ts';

export interface RunnerOptions {
  readonly lab: ObservedLab & { readonly vpcHostIp: string; readonly vethPrefix: string };
  readonly runtime: StormRuntime;
  readonly seed: number;
  readonly log: (line: string) => void;
}

export interface StormFigures {
  pods: number;
  operations: number;
  killsSurvived: number;
  faultsInjected: number;
  violations: string[];
  podStarts: number;
  ec2Calls: number;
  wallMs: number;
}

/** How long the storm waits for the agent to be healthy, or for the checks to come out clean. */
const SETTLE_MS = 90_000;

interface PodRecord extends StormPod {
  sandbox?: Sandbox & { ip: string };
}

export class StormRunner {
  readonly #o: RunnerOptions;
  readonly #pods = new Map<string, PodRecord>();
  readonly #everAssigned = new Set<string>();
  readonly opLog: string[] = [];
  readonly figures: StormFigures = {
    pods: 0,
    operations: 0,
    killsSurvived: 0,
    faultsInjected: 0,
    violations: [],
    podStarts: 0,
    ec2Calls: 0,
    wallMs: 0,
  };
  #kills = 0;

  constructor(o: RunnerOptions) {
    this.#o = o;
  }

  #note(line: string): void {
    this.opLog.push(line);
    this.#o.log(line);
  }

  async #waitHealthy(): Promise<void> {
    const deadline = Date.now() + SETTLE_MS;
    while (!(await agentHealthy(this.#o.lab))) {
      if (Date.now() > deadline) throw new Error(`the agent was not healthy within ${SETTLE_MS / 1000} s`);
      await sleep(200);
    }
  }

  async #kill(): Promise<void> {
    const pid = await this.#o.runtime.killAgent();
    this.#note(pid === undefined ? '  (agent was not running: no kill)' : `  killed agent pid ${pid}`);
    if (pid !== undefined) this.#kills++;
  }

  /** Runs `call` and, `killAfterMs` after it started, kills the agent while the call is in flight. */
  async #withKill<T>(killAfterMs: number | undefined, call: () => Promise<T>): Promise<T> {
    if (killAfterMs === undefined) return call();
    const running = call();
    const kill = sleep(killAfterMs).then(() => this.#kill());
    const [result] = await Promise.all([running, kill]);
    return result;
  }

  async #create(op: Extract<PodOp, { kind: 'create' }>): Promise<void> {
    const pod: PodRecord = { name: op.pod, uid: `storm-${this.#o.seed}-${op.pod}`, sg: op.sg };
    await this.#o.runtime.registerPod(pod);
    const sb = await this.#o.runtime.newSandbox(pod);
    this.#pods.set(pod.name, pod);
    this.figures.pods++;
    const ip = await this.#withKill(op.killAfterMs, () => this.#o.runtime.add(pod, sb));
    pod.sandbox = { ...sb, ip };
    this.#everAssigned.add(ip);
    this.figures.podStarts++;
    this.#note(`  ${op.pod} ${sb.containerId} -> ${ip}`);
  }

  async #delete(op: Extract<PodOp, { kind: 'delete' }>): Promise<void> {
    const pod = this.#pods.get(op.pod);
    const sb = pod?.sandbox;
    if (pod === undefined || sb === undefined) throw new Error(`the storm has no sandbox for pod ${op.pod}`);
    const rt = this.#o.runtime;
    await this.#withKill(op.killAfterMs, async () => {
      if (op.del === 'empty-netns') {
        await rt.removeNetns(sb);
        await rt.del(pod, sb, '');
      } else if (op.del === 'duplicate') {
        await Promise.all([rt.del(pod, sb, sb.netnsPath), rt.del(pod, sb, sb.netnsPath)]);
        await rt.del(pod, sb, sb.netnsPath);
      } else await rt.del(pod, sb, sb.netnsPath);
    });
    await rt.removeNetns(sb);
    await rt.deletePod(pod);
    this.#pods.delete(op.pod);
  }

  async #replace(op: Extract<PodOp, { kind: 'replace' }>): Promise<void> {
    const pod = this.#pods.get(op.pod);
    const old = pod?.sandbox;
    if (pod === undefined || old === undefined) throw new Error(`the storm has no sandbox for pod ${op.pod}`);
    const rt = this.#o.runtime;
    const next = await rt.newSandbox(pod);
    const oldDel = async () => {
      if (op.oldNetnsGone) {
        await rt.removeNetns(old);
        await rt.del(pod, old, '');
      } else {
        await rt.del(pod, old, old.netnsPath);
        await rt.removeNetns(old);
      }
    };
    const add = () => rt.add(pod, next);
    let ip: string;
    if (op.staleDel === 'early') {
      await oldDel();
      ip = await add();
    } else if (op.staleDel === 'late') {
      ip = await add();
      await oldDel();
    } else [ip] = await Promise.all([add(), oldDel()]);
    pod.sandbox = { ...next, ip };
    this.#everAssigned.add(ip);
    this.figures.podStarts++;
    this.#note(`  ${op.pod} ${next.containerId} -> ${ip}`);
  }

  async #podOp(op: PodOp): Promise<void> {
    if (op.kind === 'create') await this.#create(op);
    else if (op.kind === 'delete') await this.#delete(op);
    else await this.#replace(op);
  }

  async #step(op: StormOp): Promise<string[]> {
    if (op.kind === 'concurrent') {
      await Promise.all(op.ops.map((o) => this.#podOp(o)));
      return op.ops.map((o) => o.pod);
    }
    if (op.kind === 'kill') await this.#kill();
    else if (op.kind === 'faults') {
      await this.#o.runtime.setFaults(op.settings);
      if (op.name !== 'off') this.figures.faultsInjected++;
    } else {
      await this.#podOp(op);
      return [op.pod];
    }
    return [];
  }

  async #liveSandboxes(): Promise<LiveSandbox[]> {
    const out: LiveSandbox[] = [];
    for (const pod of this.#pods.values()) {
      const sb = pod.sandbox;
      if (sb === undefined) continue;
      const addresses = await sandboxAddresses(sb.netnsName);
      out.push({ pod: pod.name, containerId: sb.containerId, netnsName: sb.netnsName, ip: sb.ip, addresses });
    }
    return out;
  }

  /** One look at everything; `full` adds the agreement check (what needs convergence). */
  async #look(full: boolean, touched: readonly string[]): Promise<string[]> {
    await this.#waitHealthy();
    const lab = this.#o.lab;
    const [agent, kernel, ec2, live] = await Promise.all([
      observeAgent(lab),
      observeKernel(lab),
      observeEc2(lab),
      this.#liveSandboxes(),
    ]);
    const out = [
      ...checkLiveSandboxes(live, agent, kernel),
      ...checkSingleHolders(agent, kernel, ec2, lab.vethPrefix),
    ];
    if (full) out.push(...checkAgreement(agent, kernel, ec2, lab.vethPrefix));
    for (const sb of live.filter((s) => touched.includes(s.pod))) {
      if (!(await reaches(sb.netnsName, lab.vpcHostIp))) {
        out.push(
          `sandbox ${sb.containerId} of pod ${sb.pod} (${sb.ip}) does not reach the VPC host ${lab.vpcHostIp}`,
        );
      }
    }
    return out;
  }

  /** Checks until clean or the bound runs out (the agent may be restarting or settling). */
  async #settle(what: string, probe: () => Promise<string[]>, boundMs: number): Promise<string[]> {
    const deadline = Date.now() + boundMs;
    for (;;) {
      let found: string[];
      try {
        found = await probe();
      } catch (err) {
        found = [`${what}: could not observe the lab: ${errorText(err)}`];
      }
      if (found.length === 0 || Date.now() > deadline) return found;
      await sleep(1000);
    }
  }

  async run(plan: readonly StormOp[]): Promise<StormFigures> {
    const started = Date.now();
    const callsAtStart = await this.#ec2Calls();
    try {
      for (const [k, op] of plan.entries()) {
        this.#note(`#${k + 1} ${describeOp(op)}`);
        const stepStarted = Date.now();
        const touched = await this.#step(op);
        this.figures.operations++;
        this.#note(`  (${Date.now() - stepStarted} ms)`);
        const found = await this.#settle(`after step ${k + 1}`, () => this.#look(false, touched), 5000);
        if (found.length > 0) return this.#fail(found, started, callsAtStart);
      }
      this.#note('# end: faults off, every pod checked, then every pod deleted and one CNI GC');
      await this.#o.runtime.setFaults(FAULTS_OFF.settings);
      const all = [...this.#pods.keys()];
      const converged = await this.#settle('at the end', () => this.#look(true, all), SETTLE_MS);
      if (converged.length > 0) return this.#fail(converged, started, callsAtStart);
      const figuresCalls = (await this.#ec2Calls()) - callsAtStart;
      for (const name of all) await this.#delete({ kind: 'delete', pod: name, del: 'once' });
      await this.#o.runtime.gc();
      const clean = await this.#settle('after GC', () => this.#lookClean(), SETTLE_MS);
      this.figures.ec2Calls = figuresCalls;
      if (clean.length > 0) return this.#fail(clean, started, callsAtStart);
    } catch (err) {
      return this.#fail([`the storm could not go on: ${errorText(err)}`], started, callsAtStart);
    }
    this.figures.killsSurvived = this.#kills;
    this.figures.wallMs = Date.now() - started;
    return this.figures;
  }

  async #lookClean(): Promise<string[]> {
    await this.#waitHealthy();
    const lab = this.#o.lab;
    const [agent, kernel, ec2] = await Promise.all([observeAgent(lab), observeKernel(lab), observeEc2(lab)]);
    return [
      ...checkClean(agent, kernel, ec2, this.#everAssigned, lab.vethPrefix),
      ...checkAgreement(agent, kernel, ec2, lab.vethPrefix),
    ];
  }

  async #ec2Calls(): Promise<number> {
    const ec2 = await observeEc2(this.#o.lab);
    return Object.values(ec2.calls).reduce((n, c) => n + c.calls, 0);
  }

  async #fail(found: string[], started: number, callsAtStart: number): Promise<StormFigures> {
    this.figures.violations = found;
    this.figures.killsSurvived = this.#kills;
    this.figures.wallMs = Date.now() - started;
    this.figures.ec2Calls = (await this.#ec2Calls().catch(() => callsAtStart)) - callsAtStart;
    return this.figures;
  }
}
