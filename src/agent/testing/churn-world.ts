// A node for churn properties: one fake kernel, one fake cloud and one fake clock that outlive the
// agents started on them, and agents that can crash. A crash is a kill -9 seen from outside: the
// dead agent's pending kernel and cloud calls never land (each fails once released), and the
// next agent starts from the state directory exactly as it was on disk at that instant (copied
// synchronously, so a ledger write still in flight lands, like the page cache after a kill, only
// in the dead agent's copy).
import { cpSync, existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { agentConfigFromEnv } from '../../config/agent-config.ts';
import { Dataplane } from '../../dataplane/dataplane.ts';
import { FakeKernel } from '../../dataplane/testing/fake-kernel.ts';
import { silentLogger } from '../../infra/log.ts';
import type { FakeCloud } from '../../ipam/testing/fake-cloud.ts';
import { noPodSource } from '../../pods/watch/pod-source.ts';
import { startAgent } from '../agent.ts';
import type { RunningAgent } from '../agent-deps.ts';
import { agentEnv } from './agent-world.ts';

/** Where the order of concurrent work is decided: in call order, or by fast-check's scheduler. */
export interface Interleaver {
  /** Runs `work` once the interleaving lets it through. */
  pass<T>(label: string, work: () => Promise<T>): Promise<T>;
  /** Waits for `done`, letting every pending step through meanwhile. */
  settle<T>(done: Promise<T>): Promise<T>;
}

export const inCallOrder: Interleaver = { pass: (_label, work) => work(), settle: (done) => done };

/** Every kernel and cloud call, and every request's arrival, is a task the scheduler orders. */
export function scheduled(s: {
  schedule<T>(task: Promise<T>, label?: string): Promise<T>;
  waitFor<T>(task: Promise<T>): Promise<T>;
}): Interleaver {
  return {
    pass: (label, work) => s.schedule(Promise.resolve(label), label).then(work),
    settle: (done) => s.waitFor(done),
  };
}

export class AgentCrashed extends Error {
  constructor(what: string) {
    super(`${what}: the agent was killed before this call`);
    this.name = 'AgentCrashed';
  }
}

interface Life {
  dead: boolean;
}

/**
 * `target` seen through one agent's life: every method call waits its turn, and fails once dead.
 * `landed` sees each call that went through (method name and arguments).
 */
function fenced<T extends object>(
  target: T,
  side: string,
  life: Life,
  order: Interleaver,
  landed: (method: string, args: readonly unknown[]) => void = () => {},
): T {
  return new Proxy(target, {
    get(t, prop) {
      const value: unknown = Reflect.get(t, prop, t);
      if (typeof value !== 'function') return value;
      const what = `${side}.${String(prop)}`;
      return (...args: unknown[]) =>
        order.pass(what, async () => {
          if (life.dead) throw new AgentCrashed(what);
          const result: unknown = await (value as (...a: unknown[]) => unknown).apply(t, args);
          landed(String(prop), args);
          return result;
        });
    },
  });
}

export interface ChurnWorldOptions {
  readonly root: string;
  readonly env: Readonly<Record<string, string>>;
  readonly order: Interleaver;
  readonly cloud: FakeCloud;
}

export class ChurnWorld {
  readonly cloud: FakeCloud;
  readonly kernel = new FakeKernel();
  /** The agents' clock (cooldowns, record times); moves only when the test advances it. */
  readonly clock = { ms: 1_000_000 };
  readonly #o: ChurnWorldOptions;
  #life: Life = { dead: true };
  #agent: RunningAgent | undefined;
  #generation = 0;
  #dir: string;
  /** stop() of every agent that crashed: they must be finished before the run ends. */
  readonly #corpses: Promise<void>[] = [];

  constructor(options: ChurnWorldOptions) {
    this.#o = options;
    this.cloud = options.cloud;
    this.#dir = join(options.root, 'gen-0');
  }

  get agent(): RunningAgent {
    if (!this.#agent) throw new Error('no agent is running');
    return this.#agent;
  }

  /** Changes at every crash: an answer from an earlier generation never reached the runtime. */
  get generation(): number {
    return this.#generation;
  }

  get running(): boolean {
    return this.#agent !== undefined;
  }

  /** The current agent's DEL spool (where the plugin writes a DEL it could not deliver). */
  get spoolDir(): string {
    return join(this.#dir, 'state', 'del-spool');
  }

  /** A file standing in for a sandbox's network namespace. */
  netns(sandbox: string): string {
    const path = join(this.#o.root, `netns-${sandbox}`);
    writeFileSync(path, '');
    return path;
  }

  /** The runtime removed the sandbox's namespace: its veth ends go with it. */
  removeNetns(path: string): void {
    this.kernel.deleteNetns(path);
    rmSync(path, { force: true });
  }

  /**
   * Starts an agent on the current state dir. A start that fails (a cloud fault during start-up)
   * is a crash-looping process: it is retried, as the supervisor would, up to `attempts` times.
   */
  async start(attempts = 40): Promise<RunningAgent> {
    let last: unknown;
    for (let i = 0; i < attempts; i++) {
      const life: Life = { dead: false };
      this.#life = life;
      const dataplane = new Dataplane(fenced(this.kernel, 'kernel', life, this.#o.order));
      const config = agentConfigFromEnv(agentEnv(this.#dir, { ...this.#o.env }));
      try {
        const started = startAgent({
          config,
          targets: config.targets,
          cloud: fenced(this.cloud, 'cloud', life, this.#o.order, (m, args) => this.#fabric(m, args)),
          dataplane,
          pods: noPodSource,
          log: silentLogger,
          now: () => this.clock.ms,
          poolIntervalMs: 60_000,
        });
        this.#agent = await this.#o.order.settle(started);
        return this.#agent;
      } catch (err) {
        last = err;
        life.dead = true;
        this.#moveOn();
      }
    }
    throw new Error(`the agent did not start in ${attempts} attempts: ${String(last)}`);
  }

  /** kill -9: nothing the agent has not done yet happens; its state dir stays as it is now. */
  crash(): void {
    this.#life.dead = true;
    const dead = this.#agent;
    this.#agent = undefined;
    this.#moveOn();
    // Its calls all fail now, so stop() changes nothing shared; it only frees the socket and timers.
    if (dead) this.#corpses.push(dead.stop().catch(() => {}));
  }

  /** A clean stop (SIGTERM). */
  async stop(): Promise<void> {
    const agent = this.#agent;
    this.#agent = undefined;
    if (agent) await this.#o.order.settle(agent.stop());
    this.#life.dead = true;
  }

  /** Waits until every crashed agent has let go of its socket and timers. */
  async buryAll(): Promise<void> {
    await this.#o.order.settle(Promise.all(this.#corpses));
  }

  /** As EC2's fabric: an ENI attached to the instance appears as a link of the node, and goes on detach. */
  #fabric(method: string, args: readonly unknown[]): void {
    if (method === 'attachEni') {
      const eni = this.cloud.enis.get(String(args[0]));
      const index = eni?.attachment?.deviceIndex;
      if (eni && index !== undefined && !this.kernel.link(`ens${index + 5}`))
        this.kernel.addLink(`ens${index + 5}`, eni.mac);
    }
    if (method === 'detachEni') {
      const node = this.kernel.namespaces.get('node');
      const attached = new Set(this.cloud.attached().map((e) => e.mac.toLowerCase()));
      for (const link of [...(node?.links.values() ?? [])])
        if (link.kind === 'device' && /^ens\d+$/.test(link.name) && !attached.has(link.mac))
          this.kernel.deleteLink(link.name);
    }
  }

  /** The next process sees the state dir as it is on disk now, in a copy the dead one cannot touch. */
  #moveOn(): void {
    const next = join(this.#o.root, `gen-${++this.#generation}`);
    if (existsSync(join(this.#dir, 'state')))
      cpSync(join(this.#dir, 'state'), join(next, 'state'), {
        recursive: true,
        errorOnExist: false,
        force: true,
      });
    this.#dir = next;
  }
}
