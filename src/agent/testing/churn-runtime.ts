// The container runtime (and kubelet) of the churn property: it turns steps into CNI requests,
// sends them to whichever agent is up, and keeps what it believes of each sandbox. It behaves as
// runtimes do: a sandbox whose ADD failed or went unanswered is torn down with a DEL; a DEL the
// agent never answered is spooled by the plugin (the runtime saw success) or retried.

import type { ForwardedRequest } from '../../cni/wire.ts';
import { type ChurnStep, cloudFault, type LostDel, type PodOp } from './churn-ops.ts';
import type { ChurnWorld, Interleaver } from './churn-world.ts';
import { cniRequest } from './cni-request.ts';
import { spoolDelAsPlugin } from './plugin-spool.ts';

/** live: ADD succeeded and no DEL since; failed: the runtime still owes it a DEL; gone: DEL done. */
export type SandboxState = 'live' | 'failed' | 'gone';

export interface Sandbox {
  readonly id: string;
  readonly pod: number;
  readonly netns: string;
  state: SandboxState;
}

type Outcome =
  | { readonly answered: true; readonly exitCode: number; readonly stdout: string }
  | { readonly answered: false };

/** A chain of requests sent one after another; chains of one step run at once. */
type Chain = () => Promise<void>;

export class ChurnRuntime {
  readonly #w: ChurnWorld;
  readonly #order: Interleaver;
  readonly #pods: Sandbox[][];
  /** Wrong answers (a DEL or CHECK of a live sandbox that failed), each naming the request. */
  readonly problems: string[] = [];

  constructor(world: ChurnWorld, order: Interleaver, pods: number) {
    this.#w = world;
    this.#order = order;
    this.#pods = Array.from({ length: pods }, () => []);
  }

  sandboxes(): Sandbox[] {
    return this.#pods.flat();
  }

  async run(step: ChurnStep): Promise<void> {
    const w = this.#w;
    switch (step.op) {
      case 'burst':
        return this.#burst(step.ops, step.crash, step.lostDel);
      case 'crash':
        w.crash();
        await w.start();
        return this.#cleanUp();
      case 'restart':
        await w.stop();
        await w.start();
        return;
      case 'fault':
        w.cloud.failNext(step.method, cloudFault(step.method, step.kind), step.times);
        return;
      case 'advance':
        w.clock.ms += step.ms;
        return;
      case 'pool':
        await this.#order.settle(new Promise((r) => setTimeout(r, 5)));
        return;
      default:
        await this.#burst([step], false, 'retry');
    }
  }

  /** The runtime deletes every sandbox it knows, then lists none in a GC. */
  async deleteEverything(): Promise<void> {
    for (const sb of this.sandboxes())
      if (sb.state !== 'gone') await this.#order.settle(this.#del(sb, 'kept', 'retry'));
    await this.#order.settle(this.#gc([], true));
  }

  async #burst(ops: readonly PodOp[], crash: boolean, lostDel: LostDel): Promise<void> {
    // One operation per pod in a burst: the runtime does not race itself on one sandbox.
    const seen = new Set<number>();
    const mine = ops.filter((o) => o.op === 'gc' || (!seen.has(o.pod) && seen.add(o.pod)));
    const liveBefore = this.sandboxes().filter((s) => s.state === 'live');
    const planned = mine.map((o) => this.#plan(o, !crash, lostDel));
    // A GC lists what the runtime knows: the live sandboxes and those it is creating.
    const valid = [...liveBefore.map((s) => s.id), ...planned.flatMap((p) => p.created)];
    const chains = planned.flatMap((p) => p.chains);
    for (const o of mine) if (o.op === 'gc') chains.push(() => this.#gc(valid, !crash));
    const all = chains.map((c) => c());
    if (crash) all.push(this.#order.pass('kill -9', async () => this.#w.crash()));
    await this.#order.settle(Promise.all(all));
    if (!this.#w.running) await this.#w.start();
    await this.#cleanUp();
  }

  /** The runtime tears down what it owes a DEL (failed or unanswered ADDs, retried DELs). */
  async #cleanUp(): Promise<void> {
    for (const sb of this.sandboxes())
      if (sb.state === 'failed') await this.#order.settle(this.#del(sb, 'kept', 'retry'));
  }

  #plan(o: PodOp, sure: boolean, lostDel: LostDel): { chains: Chain[]; created: string[] } {
    if (o.op === 'gc') return { chains: [], created: [] };
    const list = this.#pods[o.pod] ?? [];
    const current = list.at(-1);
    const live = current?.state === 'live' ? current : undefined;
    switch (o.op) {
      case 'add': {
        const sb = live ?? this.#newSandbox(o.pod);
        return { chains: [() => this.#add(sb)], created: live ? [] : [sb.id] };
      }
      case 'del':
        return current
          ? { chains: [() => this.#del(current, o.netns, lostDel)], created: [] }
          : { chains: [], created: [] };
      case 'dupDel': {
        const last = list.findLast((s) => s.state === 'gone');
        return last
          ? { chains: [() => this.#del(last, 'kept', lostDel)], created: [] }
          : { chains: [], created: [] };
      }
      case 'check':
        return live ? { chains: [() => this.#check(live, sure)], created: [] } : { chains: [], created: [] };
      case 'replace': {
        const next = this.#newSandbox(o.pod);
        const add = () => this.#add(next);
        if (!live) return { chains: [add], created: [next.id] };
        const stale = () => this.#del(live, 'kept', lostDel);
        const chains: Chain[] =
          o.staleDel === 'concurrent'
            ? [add, stale]
            : o.staleDel === 'before'
              ? [() => stale().then(add)]
              : [() => add().then(stale)];
        return { chains, created: [next.id] };
      }
    }
  }

  #newSandbox(pod: number): Sandbox {
    const list = this.#pods[pod] ?? [];
    const id = `p${pod}s${list.length}`;
    const sb: Sandbox = { id, pod, netns: this.#w.netns(id), state: 'failed' };
    list.push(sb);
    return sb;
  }

  async #add(sb: Sandbox): Promise<void> {
    const wasLive = sb.state === 'live';
    const out = await this.#send(
      `ADD ${sb.id}`,
      cniRequest('ADD', sb.id, sb.netns, `pod${sb.pod}`, `uid${sb.pod}`),
    );
    // A repeated ADD is refused and leaves the sandbox as it was (the invariants check it is whole).
    if (out.answered && out.exitCode === 0) sb.state = 'live';
    else if (!wasLive) sb.state = 'failed';
  }

  async #del(sb: Sandbox, netns: 'kept' | 'gone', lostDel: LostDel): Promise<void> {
    if (netns === 'gone') this.#w.removeNetns(sb.netns);
    const req = cniRequest('DEL', sb.id, netns === 'gone' ? '' : sb.netns, `pod${sb.pod}`, `uid${sb.pod}`);
    const out = await this.#send(`DEL ${sb.id}`, req);
    if (out.answered && out.exitCode !== 0) {
      this.problems.push(`DEL of ${sb.id} (netns ${netns}) failed: ${out.stdout.trim()}`);
      sb.state = 'failed';
      return;
    }
    if (!out.answered && lostDel === 'retry') {
      sb.state = 'failed';
      return;
    }
    // The plugin spools a DEL it could not deliver into the spool dir the next agent drains.
    if (!out.answered) spoolDelAsPlugin(this.#w.spoolDir, req);
    sb.state = 'gone';
    this.#w.removeNetns(sb.netns);
  }

  async #check(sb: Sandbox, sure: boolean): Promise<void> {
    const out = await this.#send(
      `CHECK ${sb.id}`,
      cniRequest('CHECK', sb.id, sb.netns, `pod${sb.pod}`, `uid${sb.pod}`),
    );
    if (sure && out.answered && out.exitCode !== 0)
      this.problems.push(`CHECK of live sandbox ${sb.id} failed: ${out.stdout.trim()}`);
  }

  async #gc(valid: readonly string[], sure: boolean): Promise<void> {
    const out = await this.#send('GC', {
      env: { CNI_COMMAND: 'GC' },
      stdin: JSON.stringify({
        cniVersion: '1.1.0',
        name: 'vpcnet',
        type: 'vpcnet',
        'cni.dev/valid-attachments': valid.map((containerID) => ({ containerID, ifname: 'eth0' })),
      }),
    });
    if (sure && out.answered && out.exitCode !== 0) this.problems.push(`GC failed: ${out.stdout.trim()}`);
  }

  /** Sends to the agent up when the request arrives; unanswered if none is, or it dies meanwhile. */
  #send(what: string, req: ForwardedRequest): Promise<Outcome> {
    return this.#order.pass(`cni ${what}`, async () => {
      if (!this.#w.running) return { answered: false };
      const generation = this.#w.generation;
      const out = await this.#w.agent.cni(req).catch(() => undefined);
      if (out === undefined || this.#w.generation !== generation) return { answered: false };
      return { answered: true, exitCode: out.exitCode, stdout: out.stdout };
    });
  }
}
