// The reconcile loop (convergence, docs/design.md rule 4): compares the recorded pod plan of every live
// attachment with the kernel and repairs drift, and collects what no attachment owns.
//
// It never races the agent's own ADD/DEL: each attachment's repair runs in that pod's line (one
// pod, one line) and acts only if the ledger record is still the one it observed; GC re-checks
// ownership against the ledger right before it removes anything.
import { bindingSettled, settleBinding } from '../bindings/settle.ts';
import type { Dataplane } from '../dataplane/dataplane.ts';
import { PodNamespaceTooLarge } from '../dataplane/errors.ts';
import { errorText } from '../infra/error-text.ts';
import type { KeyedSerializer } from '../infra/keyed-serializer.ts';
import type { Logger } from '../infra/log.ts';
import type { PeriodicLoop } from '../infra/periodic.ts';
import type { Ledger } from '../ledger/ledger.ts';
import {
  type Attachment,
  type AttachmentKey,
  attachmentHostVeth,
  attachmentKeyString,
} from '../plan/attachment.ts';
import { type BranchBinding, bindingKeyString } from '../plan/binding.ts';
import { findDrift, findOrphans, identityOf } from '../plan/kinds.ts';
import { podLineKey } from '../plan/pod-line.ts';
import type { NodeView } from '../plan/views.ts';

export interface ReconcilerDeps {
  readonly ledger: Ledger;
  readonly dataplane: Dataplane;
  readonly serializer: KeyedSerializer;
  readonly log: Logger;
  readonly clock: { now(): number };
  /** The agent's host veth prefix: only veths with it are offered for collection. */
  readonly vethPrefix: string;
  /** Addresses whose rules are never collected: the ENIs' primary IPs (setupEni's from-rules). */
  readonly protectedAddresses: () => ReadonlySet<string>;
  /** device:inode of the namespace a path names now (see Attachment.netnsId); absent = not checked. */
  readonly netnsIdentity?: (path: string) => Promise<string | undefined>;
  /**
   * Recovered records of a lost ledger (ledger.recovered()) are never collected as orphans; this
   * releases those whose pod is gone (their host veth vanished) and returns what it released.
   */
  readonly sweepRecovered?: (node: NodeView) => Promise<string[]>;
  /** Runs passes on an interval (infra/periodic.ts); absent = passes run only when asked. */
  readonly loop?: (pass: () => Promise<unknown>) => PeriodicLoop;
  /** Told of every finished pass (the agent's metrics); default none. */
  readonly onPass?: (report: ReconcileReport) => void;
}

export interface RepairRecord {
  readonly key: AttachmentKey;
  readonly hostVeth: string;
  /** The pod network was built again (its host veth or pod interface was gone). */
  readonly rebuilt: boolean;
  /** The problems that were fixed, as CHECK words them. */
  readonly fixed: readonly string[];
}

/** A branch binding whose kernel state the pass brought back to what its sandboxes need. */
export interface BindingRepair {
  readonly binding: string;
  readonly holder: AttachmentKey | undefined;
  readonly tornDown: boolean;
  readonly fixed: readonly string[];
}

export interface ReconcileReport {
  readonly repaired: RepairRecord[];
  readonly bindings: BindingRepair[];
  /** Attachments whose pod namespace is gone: left alone, the runtime's DEL removes them. */
  readonly netnsGone: AttachmentKey[];
  /** What was removed because no attachment owned it (descriptions). */
  readonly collected: string[];
  /** Repairs or removals that failed; the next pass tries again. */
  readonly failures: { readonly key?: AttachmentKey; readonly error: string }[];
  readonly durationMs: number;
  /** What was repaired and collected, counted by resource kind (whole rebuilds as 'podNetwork'). */
  readonly byKind: { readonly repaired: Record<string, number>; readonly collected: Record<string, number> };
}

type MutableReport = { -readonly [K in keyof ReconcileReport]: ReconcileReport[K] };

export class Reconciler {
  readonly #deps: ReconcilerDeps;
  /** Passes run one at a time; the tail of the queue. */
  #pass: Promise<unknown> = Promise.resolve();
  #loop: PeriodicLoop | undefined;
  /** Attachments (key + netns) whose vanished namespace was already logged: log once. */
  readonly #reportedGone = new Set<string>();

  constructor(deps: ReconcilerDeps) {
    this.#deps = deps;
  }

  /**
   * One full pass: drift repair of every live attachment, then GC. Passes never overlap. The pass
   * at start (`startUp`) releases no recovered record: the agent releases nothing before it serves.
   */
  runOnce(options: { readonly startUp?: boolean } = {}): Promise<ReconcileReport> {
    const run = () => this.#runPass(options.startUp === true);
    const pass = this.#pass.then(run, run);
    this.#pass = pass.catch(() => undefined);
    return pass;
  }

  /** Starts the periodic loop (deps.loop), if any. */
  start(): void {
    if (this.#loop || !this.#deps.loop) return;
    this.#loop = this.#deps.loop(() =>
      this.runOnce().catch((err: unknown) =>
        this.#deps.log.error('reconcile pass failed', { error: errorText(err) }),
      ),
    );
    this.#loop.start();
  }

  /** Stops the loop and waits for a pass in flight. */
  async stop(): Promise<void> {
    await this.#loop?.stop();
    await this.#pass;
  }

  async #runPass(startUp: boolean): Promise<ReconcileReport> {
    const { ledger, dataplane, clock, log } = this.#deps;
    const started = clock.now();
    const report: MutableReport = {
      repaired: [],
      bindings: [],
      netnsGone: [],
      collected: [],
      failures: [],
      durationMs: 0,
      byKind: { repaired: {}, collected: {} },
    };
    // The records first, then the kernel: a record complete before the observation was complete
    // in the kernel when observed, so a missing piece is drift, not an ADD still at work.
    const live = ledger.list().filter((a) => a.phase === undefined);
    const node = await dataplane.observeNode();
    for (const att of live) {
      try {
        await this.#converge(att, node, report);
      } catch (err) {
        report.failures.push({ key: att.key, error: errorText(err) });
        // A pod that filled its own namespace past what is read there fails alone.
        const unread = err instanceof PodNamespaceTooLarge;
        log[unread ? 'warn' : 'error'](
          unread ? 'reconcile: pod namespace not read' : 'reconcile: repair failed',
          {
            key: att.key,
            hostVeth: attachmentHostVeth(att),
            error: errorText(err),
          },
        );
      }
    }
    // Bindings and GC judge the kernel as the repairs left it (one observation serves both unless
    // a binding changed it again). Branch bindings after their sandboxes: a rebuilt holder veth
    // needs its routes pointed at it again.
    const repairedNode = report.repaired.length > 0 ? await dataplane.observeNode() : node;
    for (const b of ledger.bindings()) {
      if (bindingSettled(ledger, b, repairedNode)) continue;
      try {
        await this.#settle(b, report);
      } catch (err) {
        report.failures.push({ error: `branch binding ${bindingKeyString(b.key)}: ${errorText(err)}` });
        log.error('reconcile: branch binding not settled', {
          binding: bindingKeyString(b.key),
          error: errorText(err),
        });
      }
    }
    const settledNode = report.bindings.length > 0 ? await dataplane.observeNode() : repairedNode;
    if (!startUp) await this.#sweepRecovered(settledNode, report);
    await this.#collect(settledNode, report);
    const liveNow = new Set(ledger.list().map((a) => `${attachmentKeyString(a.key)} ${a.netns}`));
    for (const k of this.#reportedGone) if (!liveNow.has(k)) this.#reportedGone.delete(k);
    report.durationMs = clock.now() - started;
    const anything =
      report.repaired.length + report.bindings.length + report.collected.length + report.failures.length > 0;
    const summary = {
      attachments: live.length,
      repaired: report.repaired.length,
      bindings: report.bindings.length,
      collected: report.collected.length,
      failures: report.failures.length,
      netnsGone: report.netnsGone.length,
      durationMs: report.durationMs,
    };
    if (anything) log.info('reconcile pass', summary);
    else log.debug('reconcile pass', summary);
    this.#deps.onPass?.(report);
    return report;
  }

  /** Convergence for one attachment: its plan against the kernel, repaired in its pod's line. */
  async #converge(att: Attachment, node: NodeView, report: MutableReport): Promise<void> {
    const { ledger, dataplane, serializer, log } = this.#deps;
    const pod = await dataplane.observePod(att.netns, att.resources);
    if (pod.reachable && findDrift(att.resources, { node, pod }).length === 0) return;

    await serializer.run(podLineKey(att.pod, att.key), async () => {
      // An ADD or DEL for this pod may have run while this waited: it changed or removed the
      // record (every ledger change replaces the object). Then the next pass looks again.
      if (ledger.get(att.key) !== att) return;
      // Ownership: a new sandbox may live at the old path now; its network is not ours to build.
      const replaced =
        att.netnsId !== undefined &&
        this.#deps.netnsIdentity !== undefined &&
        (await this.#deps.netnsIdentity(att.netns)) !== att.netnsId;
      const seen = await dataplane.inspect(att.netns, att.resources);
      if (seen.podUnreachable !== undefined || replaced) {
        this.#leaveToDel(att, replaced ? 'another namespace now has this path' : (seen.podUnreachable ?? ''));
        report.netnsGone.push(att.key);
        return;
      }
      if (seen.findings.length === 0) return;
      const problems = seen.findings.map((f) => f.problem);
      // A missing veth (or pod interface) takes everything on it: build the plan again, same address.
      const rebuild = seen.findings.some((f) => f.repair === undefined);
      if (rebuild) {
        // Ownership: first what is left of this attachment's own resources, nothing else.
        await dataplane.remove(att.resources, { netns: att.netns });
        await dataplane.create(att.netns, att.resources);
        log.warn('reconcile: rebuilt pod network', {
          key: att.key,
          ip: ledger.addressOf(att)?.ip,
          hostVeth: attachmentHostVeth(att),
          problems,
        });
      } else {
        await dataplane.repair(att.netns, seen.findings);
        log.warn('reconcile: repaired drift', {
          key: att.key,
          hostVeth: attachmentHostVeth(att),
          fixed: problems,
        });
      }
      const kinds = rebuild ? ['podNetwork'] : seen.findings.map((f) => f.resource.kind);
      for (const kind of kinds) countKind(report.byKind.repaired, kind);
      report.repaired.push({
        key: att.key,
        hostVeth: attachmentHostVeth(att),
        rebuilt: rebuild,
        fixed: problems,
      });
    });
  }

  /** Settles a binding in its pod's line (never racing that pod's ADD or DEL). */
  async #settle(b: BranchBinding, report: MutableReport): Promise<void> {
    const { ledger, dataplane, serializer, log } = this.#deps;
    const key = bindingKeyString(b.key);
    await serializer.run(podLineKey(b.pod, { network: '', containerId: key, ifName: '' }), async () => {
      if (ledger.binding(key) !== b) return;
      const settled = await settleBinding({ ledger, dataplane, log }, key);
      if (settled.fixed.length > 0) countKind(report.byKind.repaired, 'branchBinding');
      report.bindings.push({
        binding: key,
        holder: settled.holder,
        tornDown: settled.tornDown,
        fixed: settled.fixed,
      });
      if (settled.fixed.length > 0)
        log.warn('reconcile: restored branch ENI resources', {
          binding: key,
          pod: b.pod,
          fixed: settled.fixed,
        });
    });
  }

  #leaveToDel(att: Attachment, reason: string): void {
    const once = `${attachmentKeyString(att.key)} ${att.netns}`;
    if (this.#reportedGone.has(once)) return;
    this.#reportedGone.add(once);
    this.#deps.log.warn('reconcile: pod netns gone, leaving the attachment to its DEL', {
      key: att.key,
      netns: att.netns,
      reason,
    });
  }

  async #sweepRecovered(node: NodeView, report: MutableReport): Promise<void> {
    if (this.#deps.sweepRecovered === undefined || this.#deps.ledger.recovered().length === 0) return;
    try {
      const released = await this.#deps.sweepRecovered(node);
      report.collected.push(...released);
      if (released.length > 0) countKind(report.byKind.collected, 'recovered', released.length);
    } catch (err) {
      report.failures.push({ error: `recovered records: ${errorText(err)}` });
      this.#deps.log.error('reconcile: releasing recovered records failed', { error: errorText(err) });
    }
  }

  /** GC: what no attachment in the ledger owns (phase 'adding' included: it owns what it planned). */
  async #collect(node: NodeView, report: MutableReport): Promise<void> {
    const { ledger, dataplane, log } = this.#deps;
    // Ownership: decided from the ledger as it is now, right before removing (no await in between):
    // an ADD records its plan before it touches the kernel, so whatever it is creating is owned
    // here. Something that slips through (removed from under an ADD by a third party) is a missing
    // piece of a live attachment, which the next pass restores.
    const owned = new Set([
      ...ledger.list().flatMap((a) => a.resources.map(identityOf)),
      ...ledger.bindings().flatMap((b) => b.resources.map(identityOf)),
      // What recovery of a lost ledger holds is owned until its DEL, a GC or the sweep above.
      ...ledger.recovered().flatMap((r) => r.resources.map(identityOf)),
    ]);
    const orphans = findOrphans(node, {
      vethPrefix: this.#deps.vethPrefix,
      owns: (identity) => owned.has(identity),
      protectedAddresses: this.#deps.protectedAddresses(),
    });
    if (orphans.length === 0) return;
    const described = orphans.map((o) => o.description);
    try {
      await dataplane.collect(orphans);
      report.collected.push(...described);
      // An orphan's identity starts with its resource kind ("veth vpc…", "snat 10.0.…").
      for (const o of orphans) countKind(report.byKind.collected, o.identity.split(' ', 1)[0] ?? 'unknown');
      log.warn('reconcile: collected resources no attachment owns', { resources: described });
    } catch (err) {
      report.failures.push({ error: errorText(err) });
      log.error('reconcile: collection failed', { resources: described, error: errorText(err) });
    }
  }
}

function countKind(counts: Record<string, number>, kind: string, n = 1): void {
  counts[kind] = (counts[kind] ?? 0) + n;
}
