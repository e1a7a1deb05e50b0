// The ledger's on-disk shape and its validation. A snapshot is parsed field by field on load:
// a corrupt or future-version file is refused with the bad field named, because starting empty
// would forget what vpcnet owns (ownership) and the cooldown of freed addresses (convergence:
// cooldown survives restarts).

import { type AdoptedFrom, type Attachment, attachmentKeyString } from '../../plan/attachment.ts';
import { type BranchBinding, bindingKeyString } from '../../plan/binding.ts';
import { type RecoveredRecord, recoveredRecordId } from '../../plan/recovered.ts';
import { parseBinding } from './binding-format.ts';
import { type EniCreate, parseEniCreate } from './eni-create-format.ts';
import {
  arr,
  describe,
  int,
  LedgerFormatError,
  nonEmpty,
  type Obj,
  obj,
  optStr,
  str,
} from './json-fields.ts';
import { v1Resources } from './migrate-v1.ts';
import { type PendingEni, parsePendingEni } from './pending-eni-format.ts';
import { parseAttachmentKey, parsePod, parseResource } from './records.ts';
import { parseRecovered } from './recovered-format.ts';

export type { EniCreate } from './eni-create-format.ts';
export { LedgerFormatError } from './json-fields.ts';
export type { PendingEni, PendingEniStep } from './pending-eni-format.ts';

/**
 * 4: the snapshot names the journal that follows it (`journal`: its id and the last sequence number
 *    the snapshot covers); changes since are in that journal (store.ts). An agent that reads only
 *    snapshots must refuse this one rather than miss those changes, hence the new version. Later
 *    additions within 4, which an agent without them reads correctly (so no new version: rolling
 *    back stays possible): `journal.replaces` and the journal's `boot` (journal-file.ts), and
 *    `eniCreates` (ENI creations asked of EC2 and not yet recorded as attaching).
 * 3: ENIs part-way through being created or freed (`pendingEnis`) are recorded too.
 * 2: attachments record their whole pod plan (src/plan), branch bindings their shared resources.
 * 3, 2 and 1 are read and converted (a v2 file has no pending ENI operations; none has a journal).
 */
export const LEDGER_SCHEMA_VERSION = 4;

/** Versions this agent reads; anything else is refused. */
const READABLE_VERSIONS: readonly unknown[] = [1, 2, 3, LEDGER_SCHEMA_VERSION];

/** A freed address that must not be handed out again before its cooldown ends. */
export interface CoolingAddress {
  readonly ip: string;
  readonly eniId: string;
  /** ms since epoch */
  readonly freedAt: number;
}

export interface LedgerSnapshot {
  readonly schemaVersion: typeof LEDGER_SCHEMA_VERSION;
  readonly attachments: readonly Attachment[];
  readonly cooling: readonly CoolingAddress[];
  readonly bindings: readonly BranchBinding[];
  /** What a recovery found and holds (absent = none; src/plan/recovered.ts). */
  readonly recovered?: readonly RecoveredRecord[];
  /** ENIs vpcnet is creating or freeing (absent: none; always written by this version). */
  readonly pendingEnis?: readonly PendingEni[];
  /** ENI creations asked of EC2, not yet followed by an attaching record (absent: none). */
  readonly eniCreates?: readonly EniCreate[];
}

function parsePhase(o: Obj, at: string): { phase?: 'adding' } {
  if (o.phase === undefined) return {};
  if (o.phase === 'adding') return { phase: 'adding' };
  throw new LedgerFormatError(`${at}.phase`, `expected "adding" or absent, got ${describe(o.phase)}`);
}

function parseAdopted(o: Obj, at: string): { adopted?: AdoptedFrom } {
  if (o.adopted === undefined) return {};
  const a = obj(o.adopted, `${at}.adopted`);
  if (a.from !== 'aws-node')
    throw new LedgerFormatError(`${at}.adopted.from`, `expected "aws-node", got ${describe(a.from)}`);
  return { adopted: { from: 'aws-node', at: int(a, 'at', `${at}.adopted`) } };
}

function parseNetnsId(o: Obj, at: string): { netnsId?: string } {
  if (o.netnsId === undefined) return {};
  return { netnsId: nonEmpty(o, 'netnsId', at) };
}

export function parseAttachment(v: unknown, at: string, version: number): Attachment {
  const o = obj(v, at);
  const key = parseAttachmentKey(o.key, `${at}.key`);
  const branch = optStr(o, 'branch', at);
  return {
    ...parsePhase(o, at),
    ...parseNetnsId(o, at),
    ...parseAdopted(o, at),
    ...(branch === undefined ? {} : { branch }),
    key,
    pod: parsePod(o.pod, `${at}.pod`),
    netns: str(o, 'netns', at),
    createdAt: int(o, 'createdAt', at),
    resources:
      version === 1
        ? v1Resources(o, at, key)
        : arr(o.resources, `${at}.resources`).map((r, i) => parseResource(r, `${at}.resources[${i}]`)),
  };
}

export function parseCooling(v: unknown, at: string): CoolingAddress {
  const o = obj(v, at);
  return { ip: nonEmpty(o, 'ip', at), eniId: nonEmpty(o, 'eniId', at), freedAt: int(o, 'freedAt', at) };
}

/** Parses a decoded JSON value into a snapshot, or throws LedgerFormatError naming the bad field. */
export function parseLedgerSnapshot(json: unknown): LedgerSnapshot {
  const o = obj(json, '(root)');
  const version = o.schemaVersion;
  if (!READABLE_VERSIONS.includes(version) || typeof version !== 'number') {
    const problem =
      typeof version === 'number' && version > LEDGER_SCHEMA_VERSION
        ? `version ${version} is newer than this agent understands (${LEDGER_SCHEMA_VERSION})`
        : `expected ${LEDGER_SCHEMA_VERSION}, got ${describe(version)}`;
    throw new LedgerFormatError('schemaVersion', problem);
  }
  const attachments = arr(o.attachments, 'attachments').map((a, i) =>
    parseAttachment(a, `attachments[${i}]`, version),
  );
  const cooling = arr(o.cooling, 'cooling').map((c, i) => parseCooling(c, `cooling[${i}]`));
  const bindings =
    o.bindings === undefined
      ? []
      : arr(o.bindings, 'bindings').map((b, i) => parseBinding(b, `bindings[${i}]`));
  const recovered =
    o.recovered === undefined
      ? []
      : arr(o.recovered, 'recovered').map((r, i) => parseRecovered(r, `recovered[${i}]`));
  const pendingEnis =
    o.pendingEnis === undefined
      ? []
      : arr(o.pendingEnis, 'pendingEnis').map((p, i) => parsePendingEni(p, `pendingEnis[${i}]`));
  const eniCreates =
    o.eniCreates === undefined
      ? []
      : arr(o.eniCreates, 'eniCreates').map((c, i) => parseEniCreate(c, `eniCreates[${i}]`));
  // Ownership: one record per attachment key, one cooldown per address; a duplicate means the
  // file was not written by this code and cannot be trusted to say who owns what.
  rejectDuplicates(
    attachments.map((a) => attachmentKeyString(a.key)),
    'attachments',
    'key',
  );
  rejectDuplicates(
    cooling.map((c) => c.ip),
    'cooling',
    'ip',
  );
  rejectDuplicates(
    bindings.map((b) => bindingKeyString(b.key)),
    'bindings',
    'key',
  );
  rejectDuplicates(recovered.map(recoveredRecordId), 'recovered', 'resources');
  rejectDuplicates(
    pendingEnis.map((p) => p.eniId),
    'pendingEnis',
    'eniId',
  );
  rejectDuplicates(
    eniCreates.map((c) => c.token),
    'eniCreates',
    'token',
  );
  return {
    schemaVersion: LEDGER_SCHEMA_VERSION,
    attachments,
    cooling,
    bindings,
    pendingEnis,
    ...(recovered.length > 0 ? { recovered } : {}),
    ...(eniCreates.length > 0 ? { eniCreates } : {}),
  };
}

/** Which journal follows a snapshot: changes committed after it was written are there. */
export interface JournalRef {
  /** Random per journal: a journal with another id is not this snapshot's (it is left over). */
  readonly id: string;
  /** The sequence number of the last change the snapshot covers; the journal's records follow it. */
  readonly seq: number;
  /**
   * The journal that was at the journal's path when the snapshot was written (null: none), the one
   * a crash before this snapshot's own journal is in place leaves: any other journal, or none after
   * there was one, is damage. Absent in snapshots of earlier agents (any other journal is then
   * taken as left over, and a missing one as none).
   */
  readonly replaces?: string | null;
}

/** The journal a decoded snapshot names (none before version 4). */
export function parseJournalRef(json: unknown): JournalRef | undefined {
  const o = obj(json, '(root)');
  if (o.journal === undefined || o.schemaVersion !== LEDGER_SCHEMA_VERSION) return undefined;
  const j = obj(o.journal, 'journal');
  const ref = { id: nonEmpty(j, 'id', 'journal'), seq: int(j, 'seq', 'journal') };
  if (j.replaces === undefined) return ref;
  return { ...ref, replaces: j.replaces === null ? null : nonEmpty(j, 'replaces', 'journal') };
}

function rejectDuplicates(ids: readonly string[], list: string, field: string): void {
  const seen = new Map<string, number>();
  ids.forEach((id, i) => {
    const first = seen.get(id);
    if (first !== undefined) {
      throw new LedgerFormatError(
        `${list}[${i}].${field}`,
        `duplicate of ${list}[${first}] (${describe(id)})`,
      );
    }
    seen.set(id, i);
  });
}
