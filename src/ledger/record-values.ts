// What each kind of record holds, as the Ledger's indexes (record-index.ts) key it: the VPC
// addresses and ENIs of an attachment, a binding's address while it is live, a recovered record's.
import type { Attachment } from '../plan/attachment.ts';
import type { BranchBinding } from '../plan/binding.ts';
import type { RecoveredRecord } from '../plan/recovered.ts';

export function optional<T>(v: T | undefined): T[] {
  return v === undefined ? [] : [v];
}

export function attachmentIps(a: Attachment | undefined): string[] {
  return a === undefined ? [] : a.resources.flatMap((r) => (r.kind === 'vpcAddress' ? [r.ip] : []));
}

/** The ENIs an attachment holds an address on (what keeps an ENI from being freed). */
export function attachmentEnis(a: Attachment | undefined): string[] {
  return a === undefined ? [] : a.resources.flatMap((r) => (r.kind === 'vpcAddress' ? [r.eniId] : []));
}

/** A recovered record holds its ENI only with an address on it (as Ledger.assignments counts it). */
export function recoveredEnis(r: RecoveredRecord | undefined): string[] {
  return r?.ip !== undefined && r.eniId !== undefined ? [r.eniId] : [];
}

export function liveBindingIps(b: BranchBinding | undefined): string[] {
  return b === undefined || b.supersededBy !== undefined ? [] : [b.ip];
}
