// The kernel driver without a process per operation: every primitive operation but SNAT set
// membership goes over rtnetlink through the resident helper (helper-process.ts, native/), in the
// node's or a pod's namespace. nftables (setupSnat, snatAdd/snatDel, reading the set) stays with
// the Linux driver: per-pod SNAT elements only survive in old ledgers, off the hot path.
import { isSnatOp, type KernelOp, validateOp } from '../../plan/kernel-op.ts';
import type { NodeView, PodView } from '../../plan/views.ts';
import { DataplaneError } from '../errors.ts';
import type { Kernel, Namespace, NodeNetworkConfig, RunFailure, RunResult } from '../kernel.ts';
import { parseLinks, parseNeighbours, parseRoutes, parseRules } from '../linux/ip-json.ts';
import { LinuxKernel } from '../linux/linux-kernel.ts';
import { NetlinkHelper } from './helper-process.ts';
import { type RtnetlinkOp, readRequest, runRequest } from './wire.ts';

export interface NetlinkKernelDeps {
  /** Path of bin/vpcnet-netlink. */
  readonly program: string;
  /** Path of the node's network namespace; unset (production): the agent's own. */
  readonly hostNetns?: string;
  /** Whether the node does SNAT (default true); see LinuxKernelDeps. */
  readonly snat?: boolean;
  /** The nft side; default: a LinuxKernel on the same node namespace. */
  readonly nft?: LinuxKernel;
}

interface Indexed<T> {
  readonly op: T;
  readonly index: number;
}

export class NetlinkKernel implements Kernel {
  readonly #helper: NetlinkHelper;
  readonly #nft: LinuxKernel;

  constructor(deps: NetlinkKernelDeps) {
    this.#helper = new NetlinkHelper({
      program: deps.program,
      ...(deps.hostNetns === undefined ? {} : { nodeNetns: deps.hostNetns }),
    });
    this.#nft =
      deps.nft ??
      new LinuxKernel({
        ...(deps.hostNetns === undefined ? {} : { hostNetns: deps.hostNetns }),
        snat: deps.snat ?? true,
      });
  }

  /** Starts the helper now (the agent does so while its own memory is small: spawn forks it). */
  start(): Promise<void> {
    return this.#helper.start();
  }

  /** Ends the helper; a later request would start it again. */
  close(): Promise<void> {
    return this.#helper.close();
  }

  get helperPid(): number | undefined {
    return this.#helper.pid;
  }

  /** Helpers started so far (more than one: a helper died and was restarted). */
  get helperStarts(): number {
    return this.#helper.starts;
  }

  async run(ns: Namespace, ops: readonly KernelOp[], mode: 'stop' | 'all'): Promise<RunResult> {
    for (const op of ops) validateOp(op);
    const indexed = ops.map((op, index) => ({ op, index }));
    const rt = indexed.filter((x): x is Indexed<RtnetlinkOp> => !isSnatOp(x.op));
    const nft = indexed.filter((x) => isSnatOp(x.op));
    const runNft = async (): Promise<RunResult> => {
      if (nft.length === 0) return { entered: true, failures: [] };
      const r = await this.#nft.run(
        ns,
        nft.map((x) => x.op),
        mode,
      );
      return r.entered ? { entered: true, failures: remap(r.failures, nft) } : r;
    };
    // As the Linux driver: in 'stop' mode the nft part runs only after everything else succeeded.
    if (mode === 'all') {
      const [a, b] = await Promise.all([this.#runRtnetlink(ns, rt, mode), runNft()]);
      if (!a.entered) return a;
      return { entered: true, failures: [...a.failures, ...(b.entered ? b.failures : [])] };
    }
    const a = await this.#runRtnetlink(ns, rt, mode);
    if (!a.entered || a.failures.length > 0) return a;
    return runNft();
  }

  async #runRtnetlink(
    ns: Namespace,
    ops: readonly Indexed<RtnetlinkOp>[],
    mode: 'stop' | 'all',
  ): Promise<RunResult> {
    if (ops.length === 0) return { entered: true, failures: [] };
    const answer = await this.#helper.request((id) =>
      runRequest(
        id,
        ns,
        ops.map((x) => x.op),
        mode,
      ),
    );
    if (!answer.entered) return { entered: false, reason: answer.reason };
    if (!('failures' in answer)) throw new Error(`netlink helper: answer ${answer.id} is not a run's`);
    return { entered: true, failures: remap(answer.failures, ops) };
  }

  async readNode(): Promise<NodeView> {
    const [answer, snatElements] = await Promise.all([
      this.#helper.request((id) => readRequest(id, { side: 'node' })),
      this.#nft.readSnatSet(),
    ]);
    if (!answer.entered) throw new DataplaneError('observeNode', 'enter node namespace', '', answer.reason);
    if ('error' in answer) throw new DataplaneError('observeNode', 'rtnetlink dump', '', answer.error);
    if (!('dump' in answer)) throw new Error(`netlink helper: answer ${answer.id} is not a read's`);
    return {
      links: parseLinks(answer.dump.links),
      routes: parseRoutes(answer.dump.routes),
      rules: parseRules(answer.dump.rules),
      neighbours: [],
      snatElements,
    };
  }

  async readPod(path: string): Promise<PodView> {
    const answer = await this.#helper.request((id) => readRequest(id, { side: 'pod', path }));
    if (!answer.entered) return { reachable: false, reason: answer.reason };
    if ('error' in answer)
      throw new DataplaneError('observePod', 'rtnetlink dump', '', `${path}: ${answer.error}`);
    if (!('dump' in answer)) throw new Error(`netlink helper: answer ${answer.id} is not a read's`);
    return {
      reachable: true,
      links: parseLinks(answer.dump.links),
      routes: parseRoutes(answer.dump.routes),
      rules: parseRules(answer.dump.rules),
      neighbours: parseNeighbours(answer.dump.neighbours),
    };
  }

  setupSnat(cfg: NodeNetworkConfig): Promise<void> {
    return this.#nft.setupSnat(cfg);
  }
}

/** Failures of a sub-list, with indexes back in the caller's list. */
function remap(failures: readonly RunFailure[], sub: readonly Indexed<unknown>[]): RunFailure[] {
  return failures.map((f) => ({ index: sub[f.index]?.index ?? -1, message: f.message }));
}
