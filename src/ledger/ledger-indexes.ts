// The Ledger's indexes (record-index.ts), from what a record holds to the records holding it, so
// that the lookups an ADD or DEL makes never scan every record. Every insert, replace and removal
// of a record reports its before and after here.
import type { Attachment } from '../plan/attachment.ts';
import type { BranchBinding } from '../plan/binding.ts';
import type { RecoveredRecord } from '../plan/recovered.ts';
import { RecordIndex } from './record-index.ts';

export class LedgerIndexes {
  /** VPC address -> attachments holding it. */
  readonly attachmentsByIp = new RecordIndex();
  /** Binding key -> its attachments (sandboxes). */
  readonly attachmentsByBinding = new RecordIndex();
  /** Address -> recovered records holding it. */
  readonly #recoveredByIp = new RecordIndex();
  /** Address -> bindings holding it that are not superseded. */
  readonly #liveBindingsByIp = new RecordIndex();
  /** ENI -> attachments and recovered records (their ids prefixed `r:`) holding an address on it. */
  readonly #holdersByEni = new RecordIndex();

  attachment(id: string, before: Attachment | undefined, after: Attachment | undefined): void {
    this.attachmentsByIp.update(id, attachmentIps(before), attachmentIps(after));
    this.#holdersByEni.update(id, attachmentEnis(before), attachmentEnis(after));
    this.attachmentsByBinding.update(id, optional(before?.branch), optional(after?.branch));
  }

  binding(id: string, before: BranchBinding | undefined, after: BranchBinding | undefined): void {
    this.#liveBindingsByIp.update(id, liveBindingIps(before), liveBindingIps(after));
  }

  recovered(id: string, before: RecoveredRecord | undefined, after: RecoveredRecord | undefined): void {
    this.#recoveredByIp.update(id, optional(before?.ip), optional(after?.ip));
    this.#holdersByEni.update(`r:${id}`, recoveredEnis(before), recoveredEnis(after));
  }

  /** Whether a live record holds `ip`: a pod's VPC address, a branch ENI's on this node, a recovered one. */
  addressInUse(ip: string): boolean {
    return this.attachmentsByIp.has(ip) || this.#recoveredByIp.has(ip) || this.#liveBindingsByIp.has(ip);
  }

  /** Whether an attachment or a recovered record holds an address on `eniId`. */
  eniHeld(eniId: string): boolean {
    return this.#holdersByEni.has(eniId);
  }
}

export function optional<T>(v: T | undefined): T[] {
  return v === undefined ? [] : [v];
}

function attachmentIps(a: Attachment | undefined): string[] {
  return a === undefined ? [] : a.resources.flatMap((r) => (r.kind === 'vpcAddress' ? [r.ip] : []));
}

/** The ENIs an attachment holds an address on (what keeps an ENI from being freed). */
function attachmentEnis(a: Attachment | undefined): string[] {
  return a === undefined ? [] : a.resources.flatMap((r) => (r.kind === 'vpcAddress' ? [r.eniId] : []));
}

/** A recovered record holds its ENI only with an address on it (as Ledger.assignments counts it). */
function recoveredEnis(r: RecoveredRecord | undefined): string[] {
  return r?.ip !== undefined && r.eniId !== undefined ? [r.eniId] : [];
}

function liveBindingIps(b: BranchBinding | undefined): string[] {
  return b === undefined || b.supersededBy !== undefined ? [] : [b.ip];
}
