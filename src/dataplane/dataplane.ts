// The dataplane: carries out pod plans on a kernel. It creates an attachment's resources in plan
// order (pod side in one run, then node side in one run) and undoes what it did if a step fails,
// removes exactly the resources it is given, reads the kernel back as views, and repairs findings.
// Which steps each resource needs comes from the plan's kinds; the kernel driver only executes.

import { errorText } from '../infra/error-text.ts';
import { type EniLinkSpec, planEniLink } from '../plan/eni-plan.ts';
import { isAlreadyGone, type KernelOp, opText, type Step, validateOp } from '../plan/kernel-op.ts';
import {
  createSteps,
  type Finding,
  findDrift,
  identityOf,
  type Orphan,
  removalSteps,
} from '../plan/kinds.ts';
import { type Resource, vethOf } from '../plan/resource.ts';
import { MAIN_TABLE, type NodeView, type PodView } from '../plan/views.ts';
import { DataplaneError, PodNamespaceTooLarge } from './errors.ts';
import { type Ipv6NodeConfig, setupIpv6Node } from './ipv6-node.ts';
import {
  type Kernel,
  type KernelRun,
  NODE,
  type NodeNetworkConfig,
  type NodePortConfig,
  type RunResult,
} from './kernel.ts';
import { podScopeOf } from './pod-scope.ts';
import { withoutWhatGoesWithItsLink } from './removal-ops.ts';

export type { NodeNetworkConfig, NodePortConfig } from './kernel.ts';

/** What one inspection found; `podUnreachable` says why the pod side could not be judged. */
export interface Inspection {
  readonly findings: readonly Finding[];
  readonly podUnreachable?: string;
}

interface Failed {
  readonly step: string;
  readonly message: string;
}

/** How remove() runs. */
export interface RemoveOptions {
  /** Names the operation in errors (default removePod). */
  readonly operation?: string;
  /**
   * The pod's namespace, for what does not go with the pod's veth (a second interface's rule in
   * the pod). Absent, or a namespace that cannot be entered: that part counts as gone with the pod.
   * The caller passes it only when it knows the path still names this attachment's namespace.
   */
  readonly netns?: string;
}

interface OwnedStep extends Step {
  /** Index of the resource the step belongs to. */
  readonly owner: number;
}

function subjectOf(resources: readonly Resource[]): string {
  return vethOf(resources)?.hostName ?? '';
}

export class Dataplane {
  readonly kernel: Kernel;

  constructor(kernel: Kernel) {
    this.kernel = kernel;
  }

  /** Idempotent: vpcnet's SNAT table, chain and set exist (not called when SNAT is external). */
  setupNode(cfg: NodeNetworkConfig): Promise<void> {
    return this.kernel.setupSnat(cfg);
  }

  /** Idempotent: NodePort support's chain and rule exist (or, disabled, neither does). */
  setupNodePort(cfg: NodePortConfig): Promise<void> {
    return this.kernel.setupNodePort(cfg);
  }

  /** IPv6 mode at start: forwarding checked (refused when off), the IPv4 egress SNAT as configured. */
  setupIpv6Node(cfg: Ipv6NodeConfig): Promise<void> {
    return setupIpv6Node(this.kernel, cfg);
  }

  /**
   * Creates every resource of a pod plan (pod side inside `netns`, then the node side). If a step
   * fails, what this call created is removed again (never what it did not create: a first step
   * that fails because its object exists leaves that object alone) and the error names the step.
   */
  async create(netns: string, resources: readonly Resource[]): Promise<void> {
    const steps: OwnedStep[] = resources.flatMap((r, owner) => createSteps(r).map((s) => ({ ...s, owner })));
    for (const s of steps) validateOp(s.op);
    const touched = new Set<number>();
    const subject = subjectOf(resources);
    const batches = (['pod', 'node'] as const)
      .map((side) => ({ side, batch: steps.filter((s) => s.side === side) }))
      .filter((b) => b.batch.length > 0);
    const results = await this.#runInTurn(
      batches.map(({ side, batch }) => ({
        ns: side === 'pod' ? { side, path: netns } : NODE,
        ops: batch.map((s) => s.op),
      })),
    );
    for (const [i, { batch }] of batches.entries()) {
      const result = results[i];
      // Only a run that stopped short ends the answers early: the driver broke its word otherwise.
      if (result === undefined)
        throw new DataplaneError('addPod', 'run', subject, 'the kernel driver did not answer every run');
      if (!result.entered) {
        return this.#failCreate(netns, resources, touched, subject, `nsenter --net=${netns}`, result.reason);
      }
      const failure = result.failures[0];
      const done = failure === undefined ? batch : batch.slice(0, failure.index);
      for (const s of done) touched.add(s.owner);
      if (failure !== undefined) {
        const step = batch[failure.index];
        return this.#failCreate(
          netns,
          resources,
          touched,
          subject,
          step ? opText(step.op) : '?',
          failure.message,
        );
      }
    }
  }

  /** Runs in turn ('stop' mode), in one exchange where the kernel driver offers it. */
  async #runInTurn(runs: readonly KernelRun[]): Promise<RunResult[]> {
    if (this.kernel.runInTurn !== undefined) return this.kernel.runInTurn(runs);
    const results: RunResult[] = [];
    for (const r of runs) {
      const result = await this.kernel.run(r.ns, r.ops, 'stop');
      results.push(result);
      if (!result.entered || result.failures.length > 0) break;
    }
    return results;
  }

  async #failCreate(
    netns: string,
    resources: readonly Resource[],
    touched: ReadonlySet<number>,
    subject: string,
    step: string,
    message: string,
  ): Promise<never> {
    // Ownership: undo only what this call did; a resource none of whose steps ran is not ours.
    const undo = resources.filter((_, i) => touched.has(i));
    const leftover = await this.#removeTolerant(undo, 'addPod', netns).then(
      (left) => left.map((f) => `${f.step}: ${f.message}`).join('; '),
      (err: unknown) => errorText(err),
    );
    const suffix = leftover === '' ? '' : ` (rollback incomplete: ${leftover})`;
    throw new DataplaneError('addPod', step, subject, message + suffix);
  }

  /**
   * Removes exactly these resources; what is already gone counts as removed. The pod's own side
   * goes with its veth, except what `options.netns` lets it remove in the pod.
   */
  async remove(resources: readonly Resource[], options: RemoveOptions = {}): Promise<void> {
    const operation = options.operation ?? 'removePod';
    const [first, ...rest] = await this.#removeTolerant(resources, operation, options.netns);
    if (first === undefined) return;
    const also = rest.map((f) => `; also "${f.step}": ${f.message}`).join('');
    throw new DataplaneError(operation, first.step, subjectOf(resources), first.message + also);
  }

  /** Runs removals to the end; returns what could not be removed (nothing when all is gone). */
  async #removeTolerant(
    resources: readonly Resource[],
    operation: string,
    netns?: string,
  ): Promise<Failed[]> {
    const steps = removalSteps(resources);
    const subject = subjectOf(resources);
    const inPod = netns === undefined ? [] : await this.#runPodRemovals(steps, netns);
    return [...inPod, ...(await this.#runRemovals(steps, operation, subject))];
  }

  /** The pod-side removals, in the pod; a namespace that cannot be entered took them with it. */
  async #runPodRemovals(steps: readonly Step[], netns: string): Promise<Failed[]> {
    const ops = steps.filter((s) => s.side === 'pod').map((s) => s.op);
    if (ops.length === 0) return [];
    for (const op of ops) validateOp(op);
    const result = await this.kernel.run({ side: 'pod', path: netns }, ops, 'all');
    if (!result.entered) return [];
    return result.failures
      .filter((f) => !isAlreadyGone(f.message))
      .map((f) => ({ step: opText(ops[f.index] as KernelOp), message: f.message }));
  }

  async #runRemovals(steps: readonly Step[], operation: string, subject: string): Promise<Failed[]> {
    // Node side only: a pod's own side goes with its veth (see #runPodRemovals for the exception).
    const ops = withoutWhatGoesWithItsLink(steps.filter((s) => s.side === 'node').map((s) => s.op));
    if (ops.length === 0) return [];
    for (const op of ops) validateOp(op);
    const result = await this.kernel.run(NODE, ops, 'all');
    if (!result.entered) throw new DataplaneError(operation, 'enter node namespace', subject, result.reason);
    return result.failures
      .filter((f) => !isAlreadyGone(f.message))
      .map((f) => ({ step: opText(ops[f.index] as KernelOp), message: f.message }));
  }

  observeNode(): Promise<NodeView> {
    return this.kernel.readNode();
  }

  /**
   * The pod's namespace; given the resources to judge there, only what they need (pod-scope.ts:
   * the pod fills the rest at will). Throws PodNamespaceTooLarge for a namespace with more of that
   * than the kernel driver reads.
   */
  observePod(netns: string, resources?: readonly Resource[]): Promise<PodView> {
    return this.kernel.readPod(netns, resources === undefined ? undefined : podScopeOf(resources));
  }

  /**
   * Reads the node and the pod's namespace and judges every resource of the plan against them. A
   * pod side that cannot be judged (not entered, or holding too much to read) is `podUnreachable`.
   */
  async inspect(netns: string, resources: readonly Resource[]): Promise<Inspection> {
    const [node, pod] = await Promise.all([
      this.kernel.readNode(),
      this.observePod(netns, resources).catch((err: unknown): PodView => {
        if (err instanceof PodNamespaceTooLarge) return { reachable: false, reason: `it ${err.what}` };
        throw err;
      }),
    ]);
    const findings = findDrift(resources, { node, ...(pod.reachable ? { pod } : {}) });
    return pod.reachable ? { findings } : { findings, podUnreachable: pod.reason };
  }

  /** Removes what GC found (exactly those objects); what is already gone counts as removed. */
  async collect(orphans: readonly Orphan[]): Promise<void> {
    const [first, ...rest] = await this.#runRemovals(
      orphans.flatMap((o) => o.remove),
      'collect',
      '',
    );
    if (first === undefined) return;
    const also = rest.map((f) => `; also "${f.step}": ${f.message}`).join('');
    throw new DataplaneError('collect', first.step, '', first.message + also);
  }

  /**
   * Restores what the findings name, in place (pod side inside `netns`, then the node side).
   * Findings without a repair (a missing veth) need create() again; they are refused here.
   */
  async repair(netns: string, findings: readonly Finding[], operation = 'repairPod'): Promise<void> {
    const subject = subjectOf(findings.map((f) => f.resource));
    const unrepairable = findings.find((f) => f.repair === undefined);
    if (unrepairable) throw new DataplaneError(operation, 'repair', subject, unrepairable.problem);
    const steps = findings.flatMap((f) => f.repair ?? []);
    for (const s of steps) validateOp(s.op);
    for (const side of ['pod', 'node'] as const) {
      const batch = steps.filter((s) => s.side === side).map((s) => s.op);
      if (batch.length === 0) continue;
      const result = await this.kernel.run(side === 'pod' ? { side, path: netns } : NODE, batch, 'stop');
      if (!result.entered)
        throw new DataplaneError(operation, `nsenter --net=${netns}`, subject, result.reason);
      const failure = result.failures[0];
      if (failure !== undefined) {
        const op = batch[failure.index];
        throw new DataplaneError(operation, op ? opText(op) : '?', subject, failure.message);
      }
    }
  }

  /**
   * Makes the node hold `desired` where it held `previous` (node-side resources: a branch binding's
   * device, table, routes and rules): restores what of `desired` is missing or wrong, in place, then
   * removes what `previous` had and `desired` has not. Returns the problems it fixed.
   */
  async converge(
    desired: readonly Resource[],
    previous: readonly Resource[],
    operation = 'converge',
  ): Promise<string[]> {
    const node = await this.kernel.readNode();
    const findings = findDrift(desired, { node });
    if (findings.length > 0) await this.repair('', findings, operation);
    const keep = new Set(desired.map(identityOf));
    const stale = previous.filter((r) => !keep.has(identityOf(r)));
    if (stale.length > 0) await this.remove(stale, { operation });
    return findings.map((f) => f.problem);
  }

  /** Idempotent: the ENI's link (found by MAC) is up, has its address, route table and rule. */
  async setupEni(spec: EniLinkSpec): Promise<string> {
    const node = await this.kernel.readNode();
    const mac = spec.mac.toLowerCase();
    const link = node.links.find((l) => l.address === mac);
    if (!link) throw new Error(`setupEni: no link has MAC ${mac} (ENI device ${spec.deviceNumber})`);
    const findings = findDrift(planEniLink(spec, link.ifname), { node });
    await this.repair('', findings, 'setupEni');
    return link.ifname;
  }

  /**
   * Idempotent undo of setupEni before the ENI is detached: its table's routes, its rule and its
   * /32, nothing else; what is gone counts as removed. Refuses the primary ENI (main table).
   */
  async teardownEni(spec: EniLinkSpec): Promise<void> {
    if (spec.routeTable === MAIN_TABLE || spec.deviceNumber === 0) {
      throw new Error(`teardownEni: refusing to tear down ENI device ${spec.deviceNumber} (main table)`);
    }
    const node = await this.kernel.readNode();
    const mac = spec.mac.toLowerCase();
    const link = node.links.find((l) => l.address === mac);
    // A link already gone (the ENI detached) took its address and routes with it; the rule stays.
    const resources = planEniLink(spec, link?.ifname ?? 'gone').filter(
      (r) => link !== undefined || r.kind === 'rule',
    );
    await this.remove(resources, { operation: 'teardownEni' });
  }
}
