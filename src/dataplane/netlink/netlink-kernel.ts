// The kernel driver without a process per operation: every primitive operation goes through the
// resident helper (helper-process.ts, native/) in the node's or a pod's namespace, over rtnetlink,
// and over nfnetlink for a pod address's element in the SNAT set (~10 us, where an `nft` process
// cost milliseconds: so the per-pod element, which names exactly the pods vpcnet SNATs, stays).
// Only setupSnat, once at start, runs `nft -f` through the Linux driver (a whole table in one
// atomic script).
import { isSnatOp, type KernelOp, validateOp } from '../../plan/kernel-op.ts';
import type { NodeView, PodView } from '../../plan/views.ts';
import { DataplaneError, PodNamespaceTooLarge } from '../errors.ts';
import { IpCliKernel } from '../ip-cli/ip-cli-kernel.ts';
import { parseLinks, parseNeighbours, parseRoutes, parseRules } from '../ip-cli/ip-json.ts';
import { inAddressOrder, SNAT_SET, SNAT_TABLE } from '../ip-cli/snat.ts';
import {
  type AwsNodeFirewallRemoval,
  type EgressSnatConfig,
  type Kernel,
  type KernelRun,
  type Namespace,
  NODE,
  type NodeNetworkConfig,
  type NodePortConfig,
  type PodScope,
  type RunResult,
  type V4EgressConfig,
} from '../kernel.ts';
import { NetlinkHelper } from './helper-process.ts';
import { type Answer, planRequest, readRequest, runRequest, snatSetRequest } from './wire.ts';

export interface NetlinkKernelDeps {
  /** Path of bin/vpcnet-netlink. */
  readonly program: string;
  /** Path of the node's network namespace; unset (production): the agent's own. */
  readonly hostNetns?: string;
  /** Whether the node does SNAT (default true); see IpCliKernelDeps. */
  readonly snat?: boolean;
  /** The nft side; default: an IpCliKernel on the same node namespace. */
  readonly nft?: IpCliKernel;
}

interface Indexed {
  readonly op: KernelOp;
  readonly index: number;
}

export class NetlinkKernel implements Kernel {
  readonly #helper: NetlinkHelper;
  readonly #nft: IpCliKernel;
  readonly #snat: boolean;

  constructor(deps: NetlinkKernelDeps) {
    this.#helper = new NetlinkHelper({
      program: deps.program,
      ...(deps.hostNetns === undefined ? {} : { nodeNetns: deps.hostNetns }),
    });
    this.#nft =
      deps.nft ??
      new IpCliKernel({
        ...(deps.hostNetns === undefined ? {} : { hostNetns: deps.hostNetns }),
        snat: deps.snat ?? true,
      });
    this.#snat = deps.snat ?? true;
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
    if (mode === 'stop') return this.#runPart(ns, indexed, mode);
    // In a removal every operation runs whatever the others do, so order does not matter. Deleting
    // a SNAT element commits an nf_tables transaction, which waits for an RCU grace period (~13 ms
    // measured), as deleting a veth does (~15-20 ms): in two requests, two workers, the waits
    // overlap instead of adding up.
    const [snat, rest] = [indexed.filter((x) => isSnatOp(x.op)), indexed.filter((x) => !isSnatOp(x.op))];
    const [a, b] = await Promise.all([this.#runPart(ns, rest, mode), this.#runPart(ns, snat, mode)]);
    if (!a.entered) return a;
    if (!b.entered) return b;
    return { entered: true, failures: [...a.failures, ...b.failures] };
  }

  /** A pod's side and the node's side of an ADD in one request: one round trip, one worker. */
  async runInTurn(runs: readonly KernelRun[]): Promise<RunResult[]> {
    for (const r of runs) for (const op of r.ops) validateOp(op);
    const answer = await this.#helper.request((id) => planRequest(id, runs));
    if (!('parts' in answer)) throw new Error(`netlink helper: answer ${answer.id} is not a plan's`);
    return answer.parts.map((p) => (p.entered ? { entered: true, failures: p.failures } : p));
  }

  /** Runs `part` (operations with their indexes in the caller's list) in one request. */
  async #runPart(ns: Namespace, part: readonly Indexed[], mode: 'stop' | 'all'): Promise<RunResult> {
    if (part.length === 0) return { entered: true, failures: [] };
    const answer = notPlan(
      await this.#helper.request((id) =>
        runRequest(
          id,
          ns,
          part.map((x) => x.op),
          mode,
        ),
      ),
    );
    if (!answer.entered) return { entered: false, reason: answer.reason };
    if (!('failures' in answer)) throw new Error(`netlink helper: answer ${answer.id} is not a run's`);
    return {
      entered: true,
      failures: answer.failures.map((f) => ({ index: part[f.index]?.index ?? -1, message: f.message })),
    };
  }

  async readNode(): Promise<NodeView> {
    const [answer, snatElements] = await Promise.all([
      this.#helper.request((id) => readRequest(id, NODE)).then(notPlan),
      this.#snat ? this.#readSnatSet() : Promise.resolve(undefined),
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

  /** vpcnet's SNAT set on the node; undefined when it does not exist (setupSnat not run). */
  async #readSnatSet(): Promise<readonly string[] | undefined> {
    const answer = notPlan(await this.#helper.request((id) => snatSetRequest(id, NODE)));
    const step = `list set ip ${SNAT_TABLE} ${SNAT_SET}`;
    if (!answer.entered) throw new DataplaneError('observeNode', step, '', answer.reason);
    if ('error' in answer) throw new DataplaneError('observeNode', step, '', answer.error);
    if (!('elements' in answer)) throw new Error(`netlink helper: answer ${answer.id} is not an nftset's`);
    return answer.elements === undefined ? undefined : inAddressOrder(answer.elements);
  }

  async readPod(path: string, scope?: PodScope): Promise<PodView> {
    const answer = notPlan(await this.#helper.request((id) => readRequest(id, { side: 'pod', path }, scope)));
    if (!answer.entered) return { reachable: false, reason: answer.reason };
    if ('error' in answer)
      throw new DataplaneError('observePod', 'rtnetlink dump', '', `${path}: ${answer.error}`);
    if ('tooLarge' in answer) throw new PodNamespaceTooLarge(path, answer.tooLarge);
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

  setupNodePort(cfg: NodePortConfig): Promise<void> {
    return this.#nft.setupNodePort(cfg);
  }

  setupV4Egress(cfg: V4EgressConfig | undefined): Promise<void> {
    return this.#nft.setupV4Egress(cfg);
  }

  setupV6Egress(cfg: EgressSnatConfig | undefined): Promise<void> {
    return this.#nft.setupV6Egress(cfg);
  }

  readNodeSysctl(name: string): Promise<string> {
    return this.#nft.readNodeSysctl(name);
  }

  removeAwsNodeFirewall(): Promise<AwsNodeFirewallRemoval> {
    return this.#nft.removeAwsNodeFirewall();
  }
}

/** An answer to a single request: a plan's answer there means the two sides disagree on the wire. */
function notPlan(answer: Answer): Exclude<Answer, { parts: unknown }> {
  if ('parts' in answer)
    throw new Error(`netlink helper: answer ${answer.id} is a plan's, not a single request's`);
  return answer;
}
