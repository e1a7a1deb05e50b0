// The durable side of the ENI lifecycle: before vpcnet asks EC2 for an ENI it records the
// creation, before it attaches the ENI or starts to free one it records the ENI, and it moves or
// drops the records as the cloud calls succeed. After a kill -9 the pool manager finds the records
// and finishes the work (attach or delete; detach, then delete; find the ENI of an interrupted
// creation and delete it), so no ENI is left behind for the sweep to find after its grace.

import { randomUUID } from 'node:crypto';
import type { EniInfo } from '../../cloud/cloud.ts';
import { cloudErrorText } from '../cloud-sync/cloud-error-text.ts';
import type { PoolLog } from '../pool/pool-parts.ts';
import type { EniRegistry } from './eni-registry.ts';

/** One ENI vpcnet is part-way through creating or freeing (the ledger's PendingEni). */
export interface PendingEniRecord {
  readonly eniId: string;
  readonly step: 'attaching' | 'detaching' | 'deleting';
  /** The ENI attachment to detach (step detaching). */
  readonly attachmentId?: string;
  /** ms since epoch: when the record took this step. */
  readonly since: number;
}

/** An ENI creation asked of EC2 and not yet followed by an attaching record (the ledger's EniCreate). */
export interface EniCreateRecord {
  readonly token: string;
  /** ms since epoch: the ENI's createdAt tag. */
  readonly createdAt: number;
  readonly subnetId: string;
  /** ms since epoch: when the record was written. */
  readonly since: number;
}

/** Where the records are kept durably; the agent's Ledger has exactly these methods. */
export interface PendingEniRecords {
  pendingEnis(): readonly PendingEniRecord[];
  putPendingEni(record: PendingEniRecord): void;
  removePendingEni(eniId: string): boolean;
  eniCreates(): readonly EniCreateRecord[];
  putEniCreate(record: EniCreateRecord): void;
  removeEniCreate(token: string): boolean;
  commit(): Promise<void>;
}

/**
 * Records ENI steps. Without records (unit tests of other parts) every step is a no-op. The step
 * that must be durable before a cloud call (attaching, detaching) rejects when the write fails;
 * the steps that follow a cloud call only log a failed write (the change rides on the next one).
 */
export class EniJournal {
  readonly #records: PendingEniRecords | undefined;
  readonly #clock: { now(): number };
  readonly #log: PoolLog;
  /** Tokens of the creations this agent is making now (their ENI is not lost, only on its way). */
  readonly #creating = new Set<string>();

  constructor(records: PendingEniRecords | undefined, clock: { now(): number }, log: PoolLog) {
    this.#records = records;
    this.#clock = clock;
    this.#log = log;
  }

  list(): readonly PendingEniRecord[] {
    return this.#records?.pendingEnis() ?? [];
  }

  get(eniId: string): PendingEniRecord | undefined {
    return this.list().find((r) => r.eniId === eniId);
  }

  /**
   * About to ask EC2 for an ENI tagged with `createdAt`: durable before CreateNetworkInterface, so
   * that an ENI EC2 made while the agent died (or whose reply was lost) is looked for and deleted
   * at once rather than after the leaked-ENI sweep's grace. Returns the record's token.
   */
  async creating(subnetId: string, createdAt: number): Promise<string> {
    const token = randomUUID();
    this.#creating.add(token);
    if (!this.#records) return token;
    this.#records.putEniCreate({ token, createdAt, subnetId, since: this.#clock.now() });
    try {
      await this.#records.commit();
    } catch (err) {
      this.#creating.delete(token);
      this.#records.removeEniCreate(token);
      throw err;
    }
    return token;
  }

  /** EC2 refused the creation (a definite answer): no ENI was made, the record goes. */
  async createRefused(token: string): Promise<void> {
    this.#creating.delete(token);
    if (!this.#records?.removeEniCreate(token)) return;
    await this.#commitQuietly(token);
  }

  /** The creation failed without a definite answer: its record stays, for the sweep to resolve. */
  createInDoubt(token: string): void {
    this.#creating.delete(token);
  }

  /** Creations whose ENI may exist without a record of its own: none is being made by this agent now. */
  createsInDoubt(): readonly EniCreateRecord[] {
    return (this.#records?.eniCreates() ?? []).filter((c) => !this.#creating.has(c.token));
  }

  /** createdAt of the creations this agent is making now. */
  creatingNow(): number[] {
    const now = this.#records?.eniCreates() ?? [];
    return now.filter((c) => this.#creating.has(c.token)).map((c) => c.createdAt);
  }

  /** The sweep found the ENI of a creation in doubt, or gave up looking: the record goes. */
  async createResolved(token: string): Promise<void> {
    if (!this.#records?.removeEniCreate(token)) return;
    await this.#commitQuietly(token);
  }

  /**
   * Created (the creation's record, if any, gives way in the same write), about to be attached:
   * durable before AttachNetworkInterface.
   */
  async attaching(eniId: string, createToken?: string): Promise<void> {
    if (createToken !== undefined) {
      this.#creating.delete(createToken);
      this.#records?.removeEniCreate(createToken);
    }
    await this.#durably({ eniId, step: 'attaching', since: this.#clock.now() });
  }

  /** Chosen to be freed: durable before its link is torn down and the cloud detaches it. */
  async detaching(eniId: string, attachmentId: string): Promise<void> {
    await this.#durably({ eniId, step: 'detaching', attachmentId, since: this.#clock.now() });
  }

  /** Detached (or never attached): its delete is retried until EC2 says it is gone. */
  async deleting(eniId: string): Promise<void> {
    if (!this.#records) return;
    this.#records.putPendingEni({ eniId, step: 'deleting', since: this.#clock.now() });
    await this.#commitQuietly(eniId);
  }

  /** Attached and in the registry, or deleted: nothing left to finish. */
  async done(eniId: string): Promise<void> {
    if (!this.#records?.removePendingEni(eniId)) return;
    await this.#commitQuietly(eniId);
  }

  async #durably(record: PendingEniRecord): Promise<void> {
    if (!this.#records) return;
    this.#records.putPendingEni(record);
    await this.#records.commit();
  }

  async #commitQuietly(eniId: string): Promise<void> {
    try {
      await this.#records?.commit();
    } catch (err) {
      this.#log.warn('cannot write the ENI record yet; it rides on the next ledger write', {
        eni: eniId,
        error: cloudErrorText(err),
      });
    }
  }
}

/**
 * At start, before the described ENIs are adopted: every recorded ENI goes back into the registry
 * at the step it had reached, so the passes finish it and adoption leaves it out of the pool.
 *   attaching, and EC2 lists it attached ... the attach happened: the record goes, adoption takes it
 *                                           (the caller still sets DeleteOnTermination on it)
 *   attaching, not listed ................. never attached: delete it
 *   detaching ............................. detach again (a repeated detach is harmless), then delete
 *   deleting, listed attached ............. a stale describe, or attached again: detach, then delete
 *   deleting .............................. delete it
 */
export async function resumePendingEnis(
  registry: EniRegistry,
  journal: EniJournal,
  log: PoolLog,
  described: readonly EniInfo[],
): Promise<{ attachedBeforeStop: string[] }> {
  const attachedBeforeStop: string[] = [];
  for (const record of journal.list()) {
    const attached = described.find((e) => e.eniId === record.eniId);
    if (record.step === 'attaching' && attached) {
      await journal.done(record.eniId);
      attachedBeforeStop.push(record.eniId);
      log.info('ENI attached before the agent stopped joins the pool', { eni: record.eniId });
      continue;
    }
    const attachmentId = attached?.attachmentId ?? record.attachmentId;
    if (attachmentId !== undefined && record.step !== 'attaching') {
      registry.addResumedDetach(record.eniId, attachmentId, attached);
      log.warn('resuming the detach of an ENI the agent had started to free', {
        eni: record.eniId,
        attachmentId,
      });
      continue;
    }
    registry.addLeftOver(record.eniId);
    if (record.step !== 'deleting') await journal.deleting(record.eniId);
    log.warn('resuming the delete of an ENI vpcnet created', { eni: record.eniId, step: record.step });
  }
  return { attachedBeforeStop };
}
