// What a ledger write carries when it is not the whole state: per record list, the records put
// (inserted or replaced) and the ids removed since the last durable write. A journal record is one
// of these; replaying them in order over the snapshot gives the state of the last commit.
import { type Attachment, attachmentKeyString } from '../plan/attachment.ts';
import { type BranchBinding, bindingKeyString } from '../plan/binding.ts';
import { type RecoveredRecord, recoveredRecordId } from '../plan/recovered.ts';
import { parseBinding } from './format/binding-format.ts';
import { type EniCreate, parseEniCreate } from './format/eni-create-format.ts';
import { arr, describe, LedgerFormatError, type Obj, obj } from './format/json-fields.ts';
import { type PendingEni, parsePendingEni } from './format/pending-eni-format.ts';
import { parseRecovered } from './format/recovered-format.ts';
import {
  type CoolingAddress,
  LEDGER_SCHEMA_VERSION,
  type LedgerSnapshot,
  parseAttachment,
  parseCooling,
} from './format/snapshot.ts';

export interface ListChanges<T> {
  readonly put: readonly T[];
  /** Ids (recordId) of records removed. */
  readonly removed: readonly string[];
}

export interface LedgerChanges {
  readonly attachments: ListChanges<Attachment>;
  readonly cooling: ListChanges<CoolingAddress>;
  readonly bindings: ListChanges<BranchBinding>;
  readonly recovered: ListChanges<RecoveredRecord>;
  readonly pendingEnis: ListChanges<PendingEni>;
  readonly eniCreates: ListChanges<EniCreate>;
}

export type LedgerList = keyof LedgerChanges;

export const LEDGER_LISTS: readonly LedgerList[] = [
  'attachments',
  'cooling',
  'bindings',
  'recovered',
  'pendingEnis',
  'eniCreates',
];

/** A write that changes nothing (tests build their changes from it). */
export const NO_CHANGES: LedgerChanges = {
  attachments: { put: [], removed: [] },
  cooling: { put: [], removed: [] },
  bindings: { put: [], removed: [] },
  recovered: { put: [], removed: [] },
  pendingEnis: { put: [], removed: [] },
  eniCreates: { put: [], removed: [] },
};

/** The id each list keys its records by (one record per id); the Ledger's maps use the same. */
export const recordId = {
  attachments: (a: Attachment): string => attachmentKeyString(a.key),
  cooling: (c: CoolingAddress): string => c.ip,
  bindings: (b: BranchBinding): string => bindingKeyString(b.key),
  recovered: recoveredRecordId,
  pendingEnis: (p: PendingEni): string => p.eniId,
  eniCreates: (c: EniCreate): string => c.token,
};

/** The JSON form (lists and parts without changes left out, so a small change is a small record). */
export function changesJson(changes: LedgerChanges): Obj {
  const out: Obj = {};
  for (const list of LEDGER_LISTS) {
    const { put, removed } = changes[list];
    if (put.length === 0 && removed.length === 0) continue;
    out[list] = { ...(put.length > 0 ? { put } : {}), ...(removed.length > 0 ? { removed } : {}) };
  }
  return out;
}

function parseList<T>(
  o: Obj,
  list: LedgerList,
  at: string,
  parse: (v: unknown, at: string) => T,
): ListChanges<T> {
  if (o[list] === undefined) return { put: [], removed: [] };
  const l = obj(o[list], `${at}.${list}`);
  const put = l.put === undefined ? [] : arr(l.put, `${at}.${list}.put`);
  const removed = l.removed === undefined ? [] : arr(l.removed, `${at}.${list}.removed`);
  return {
    put: put.map((v, i) => parse(v, `${at}.${list}.put[${i}]`)),
    removed: removed.map((v, i) => {
      if (typeof v === 'string' && v !== '') return v;
      throw new LedgerFormatError(`${at}.${list}.removed[${i}]`, `expected an id, got ${describe(v)}`);
    }),
  };
}

/** Parses the changes of a journal record (`at` names the record in errors). */
export function parseLedgerChanges(o: Obj, at: string): LedgerChanges {
  return {
    attachments: parseList(o, 'attachments', at, (v, a) => parseAttachment(v, a, LEDGER_SCHEMA_VERSION)),
    cooling: parseList(o, 'cooling', at, parseCooling),
    bindings: parseList(o, 'bindings', at, parseBinding),
    recovered: parseList(o, 'recovered', at, parseRecovered),
    pendingEnis: parseList(o, 'pendingEnis', at, parsePendingEni),
    eniCreates: parseList(o, 'eniCreates', at, parseEniCreate),
  };
}

function keyed<T>(records: readonly T[], id: (r: T) => string): Map<string, T> {
  return new Map(records.map((r) => [id(r), r]));
}

function apply<T>(into: Map<string, T>, changes: ListChanges<T>, id: (r: T) => string): void {
  for (const r of changes.put) into.set(id(r), r);
  for (const removed of changes.removed) into.delete(removed);
}

/** The snapshot with `records` applied in order (the state a journal replay arrives at). */
export function replayChanges(snapshot: LedgerSnapshot, records: readonly LedgerChanges[]): LedgerSnapshot {
  if (records.length === 0) return snapshot;
  const attachments = keyed(snapshot.attachments, recordId.attachments);
  const cooling = keyed(snapshot.cooling, recordId.cooling);
  const bindings = keyed(snapshot.bindings, recordId.bindings);
  const recovered = keyed(snapshot.recovered ?? [], recordId.recovered);
  const pendingEnis = keyed(snapshot.pendingEnis ?? [], recordId.pendingEnis);
  const eniCreates = keyed(snapshot.eniCreates ?? [], recordId.eniCreates);
  for (const c of records) {
    apply(attachments, c.attachments, recordId.attachments);
    apply(cooling, c.cooling, recordId.cooling);
    apply(bindings, c.bindings, recordId.bindings);
    apply(recovered, c.recovered, recordId.recovered);
    apply(pendingEnis, c.pendingEnis, recordId.pendingEnis);
    apply(eniCreates, c.eniCreates, recordId.eniCreates);
  }
  return {
    schemaVersion: LEDGER_SCHEMA_VERSION,
    attachments: [...attachments.values()],
    cooling: [...cooling.values()],
    bindings: [...bindings.values()],
    ...(recovered.size > 0 ? { recovered: [...recovered.values()] } : {}),
    pendingEnis: [...pendingEnis.values()],
    ...(eniCreates.size > 0 ? { eniCreates: [...eniCreates.values()] } : {}),
  };
}

/** The records `ids` names as they are now in `records`: put, or removed when gone. */
export function listChanges<T>(ids: ReadonlySet<string>, records: ReadonlyMap<string, T>): ListChanges<T> {
  const put: T[] = [];
  const removed: string[] = [];
  for (const id of ids) {
    const r = records.get(id);
    if (r === undefined) removed.push(id);
    else put.push(r);
  }
  return { put, removed };
}
