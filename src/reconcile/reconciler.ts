// The reconcile loop (convergence, DESIGN.md rule 4): compares the intended state of every live
// attachment with the kernel and repairs drift, and collects what no attachment owns.
//
// It never races the agent's own ADD/DEL: each attachment's repair runs in that pod's line (one
// pod, one line) and acts only if the ledger record is still the one it observed; GC re-checks
// ownership against the ledger right before it removes anything.

import { podLineKey } from '../agent/context.ts';
import type { Logger } from '../agent/log.ts';
import type { PodSerializer } from '../agent/serializer.ts';
import type { Dataplane, NodeObservation } from '../dataplane/dataplane.ts';
import {
  type Attachment,
  type AttachmentKey,
  attachmentKeyString,
  type OwnedResource,
} from '../ledger/attachment.ts';
import type { Ledger } from '../ledger/ledger.ts';
import { hostDrift, intendedSpec } from './intent.ts';
import { findOrphans, type Ownership } from './orphans.ts';

export interface ReconcilerDeps {
  readonly ledger: Ledger;
  readonly dataplane: Dataplane;
  readonly serializer: PodSerializer;
  readonly log: Logger;
  readonly clock: { now(): number };
  /** The agent's host veth prefix: only veths with it are offered for collection. */
  readonly vethPrefix: string;
  /** Addresses whose rules are never collected: the ENIs' primary IPs (setupEni's from-rules). */
  readonly protectedAddresses: () => ReadonlySet<string>;
  /** MTU for a record that carries none. */
  readonly defaultMtu: number;
  /** device:inode of the namespace a path names now (see Attachment.netnsId); absent = not checked. */
  readonly netnsIdentity?: (path: string) => Promise<string | undefined>;
}

export interface RepairRecord {
  readonly key: AttachmentKey;
  readonly hostVeth: string;
  /** The pod network was built again (its host veth or pod interface was gone). */
  readonly rebuilt: boolean;
  /** The problems that were fixed, in inspectPod's wording. */
  readonly fixed: readonly string[];
}

export interface ReconcileReport {
  readonly repaired: RepairRecord[];
  /** Attachments whose pod namespace is gone: left alone, the runtime's DEL removes them. */
  readonly netnsGone: AttachmentKey[];
  /** Resources removed because no attachment owned them. */
  readonly collected: OwnedResource[];
  /** Repairs or removals that failed; the next pass tries again. */
  readonly failures: { readonly key?: AttachmentKey; readonly error: string }[];
  readonly durationMs: number;
}

type MutableReport = { -readonly [K in keyof ReconcileReport]: ReconcileReport[K] };

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

export class Reconciler {
  readonly #deps: ReconcilerDeps;
  /** Passes run one at a time; the tail of the queue. */
  #pass: Promise<unknown> = Promise.resolve();
  #timer: NodeJS.Timeout | undefined;
  #running = false;
  /** Attachments (key + netns) whose vanished namespace was already logged: log once. */
  readonly #reportedGone = new Set<string>();

  constructor(deps: ReconcilerDeps) {
    this.#deps = deps;
  }

  /** One full pass: drift repair of every live attachment, then GC. Passes never overlap. */
  runOnce(): Promise<ReconcileReport> {
    const pass = this.#pass.then(
      () => this.#runPass(),
      () => this.#runPass(),
    );
    this.#pass = pass.catch(() => undefined);
    return pass;
  }

  /** Runs a pass every intervalMs (the first one interval from now) until stop(). */
  start(intervalMs: number): void {
    if (this.#running || intervalMs <= 0) return;
    this.#running = true;
    const schedule = () => {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.runOnce()
          .catch((err: unknown) => this.#deps.log.error('reconcile pass failed', { error: message(err) }))
          .finally(() => {
            if (this.#running) schedule();
          });
      }, intervalMs);
      // The loop alone must not keep the process alive.
      this.#timer.unref();
    };
    schedule();
  }

  /** Stops the loop and waits for a pass in flight. */
  async stop(): Promise<void> {
    this.#running = false;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#pass;
  }

  async #runPass(): Promise<ReconcileReport> {
    const { ledger, dataplane, clock, log } = this.#deps;
    const started = clock.now();
    const report: MutableReport = { repaired: [], netnsGone: [], collected: [], failures: [], durationMs: 0 };
    // The records first, then the kernel: a record complete before the observation was complete
    // in the kernel when observed, so a missing piece is drift, not an ADD still at work.
    const live = ledger.list().filter((a) => a.phase === undefined);
    const node = await dataplane.observeNode();
    for (const att of live) {
      try {
        await this.#converge(att, node, report);
      } catch (err) {
        report.failures.push({ key: att.key, error: message(err) });
        log.error('reconcile: repair failed', { key: att.key, hostVeth: att.hostVeth, error: message(err) });
      }
    }
    await this.#collect(node, report);
    const liveNow = new Set(ledger.list().map((a) => `${attachmentKeyString(a.key)} ${a.netns}`));
    for (const k of this.#reportedGone) if (!liveNow.has(k)) this.#reportedGone.delete(k);
    report.durationMs = clock.now() - started;
    const acted = report.repaired.length + report.collected.length + report.failures.length > 0;
    const summary = {
      attachments: live.length,
      repaired: report.repaired.length,
      collected: report.collected.length,
      failures: report.failures.length,
      netnsGone: report.netnsGone.length,
      durationMs: report.durationMs,
    };
    if (acted) log.info('reconcile pass', summary);
    else log.debug('reconcile pass', summary);
    return report;
  }

  /** Convergence for one attachment: its intended state against the kernel, repaired in its pod's line. */
  async #converge(att: Attachment, node: NodeObservation, report: MutableReport): Promise<void> {
    const { ledger, dataplane, serializer, log } = this.#deps;
    const spec = intendedSpec(att, this.#deps.defaultMtu);
    const host = hostDrift(spec, node);
    const pod = await dataplane.observePodSide(spec);
    if (pod.reachable && pod.drift.length === 0 && host.length === 0) return;

    await serializer.run(podLineKey(att.pod, att.key), async () => {
      // An ADD or DEL for this pod may have run while this waited: it changed or removed the
      // record (every ledger change replaces the object). Then the next pass looks again.
      if (ledger.get(att.key) !== att) return;
      // Ownership: a new sandbox may live at the old path now; its network is not ours to build.
      const replaced =
        att.netnsId !== undefined &&
        this.#deps.netnsIdentity !== undefined &&
        (await this.#deps.netnsIdentity(att.netns)) !== att.netnsId;
      if (!pod.reachable || replaced) {
        report.netnsGone.push(att.key);
        const once = `${attachmentKeyString(att.key)} ${att.netns}`;
        if (!this.#reportedGone.has(once)) {
          this.#reportedGone.add(once);
          log.warn('reconcile: pod netns gone, leaving the attachment to its DEL', {
            key: att.key,
            netns: att.netns,
            reason: replaced ? 'another namespace now has this path' : pod.reachable ? '' : pod.reason,
          });
        }
        return;
      }
      const vethGone = host.some((d) => d.piece === 'veth') || pod.drift.some((d) => d.piece === 'interface');
      if (vethGone) {
        const problems = [...pod.drift, ...host].map((d) => d.problem);
        await this.#rebuild(att);
        report.repaired.push({ key: att.key, hostVeth: att.hostVeth, rebuilt: true, fixed: problems });
        log.warn('reconcile: rebuilt pod network', {
          key: att.key,
          ip: att.ip,
          hostVeth: att.hostVeth,
          problems,
        });
        return;
      }
      const fixed = [
        ...(host.length > 0 ? await dataplane.repairHostSide(spec) : []),
        ...(pod.drift.length > 0 ? await dataplane.repairPodSide(spec) : []),
      ];
      if (fixed.length === 0) return;
      report.repaired.push({ key: att.key, hostVeth: att.hostVeth, rebuilt: false, fixed });
      log.warn('reconcile: repaired drift', { key: att.key, hostVeth: att.hostVeth, fixed });
    });
  }

  /**
   * The veth pair is gone (and with it the pod side): build the pod network again with the same
   * address. Ownership: first remove what is left of this attachment's own resources, nothing else.
   */
  async #rebuild(att: Attachment): Promise<void> {
    const { ledger, dataplane } = this.#deps;
    const spec = intendedSpec(att, this.#deps.defaultMtu);
    await dataplane.removeResources(att.resources.filter((r) => r.kind !== 'address'));
    const done = await dataplane.addPod(spec);
    const resources = [...att.resources.filter((r) => r.kind === 'address'), ...done.resources];
    if (JSON.stringify(resources) === JSON.stringify(att.resources)) return;
    // Durable before success: the record lists exactly what the rebuilt network owns.
    ledger.put({ ...att, resources });
    await ledger.commit();
  }

  /** GC: what no attachment in the ledger owns (phase 'adding' included: it owns what it planned). */
  async #collect(node: NodeObservation, report: MutableReport): Promise<void> {
    const { ledger, dataplane, log } = this.#deps;
    const owner = (): Ownership => {
      const veths = new Set(ledger.list().map((a) => a.hostVeth));
      return {
        ownsVeth: (name) => veths.has(name),
        ownsAddress: (ip) => ledger.findByIp(ip) !== undefined,
        protectedAddresses: this.#deps.protectedAddresses(),
      };
    };
    // Ownership: decided from the ledger as it is now, right before removing (no await in between):
    // an ADD records its attachment before it touches the kernel, so whatever it is creating is
    // owned here. Something that slips through (removed from under an ADD by a third party) is a
    // missing piece of a live attachment, which the next pass restores.
    const orphans = findOrphans(node, this.#deps.vethPrefix, owner());
    if (orphans.length === 0) return;
    try {
      await dataplane.removeResources(orphans);
      report.collected.push(...orphans);
      log.warn('reconcile: collected resources no attachment owns', { resources: orphans });
    } catch (err) {
      report.failures.push({ error: message(err) });
      log.error('reconcile: collection failed', { resources: orphans, error: message(err) });
    }
  }
}
