// The ledger's on-disk shape and its validation. A snapshot is parsed field by field on load:
// a corrupt or future-version file is refused with the bad field named, because starting empty
// would forget what vpcnet owns (ownership) and the cooldown of freed addresses (convergence:
// cooldown survives restarts).

import { type Attachment, attachmentKeyString, type OwnedResource, type PodIdentity } from './attachment.ts';

export const LEDGER_SCHEMA_VERSION = 1;

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
}

/** Thrown when a snapshot does not have the expected structure; `field` is a path like `attachments[2].ip`. */
export class LedgerFormatError extends Error {
  constructor(
    readonly field: string,
    problem: string,
  ) {
    super(`${field}: ${problem}`);
    this.name = 'LedgerFormatError';
  }
}

type Obj = Record<string, unknown>;

function obj(v: unknown, field: string): Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw new LedgerFormatError(field, `expected an object, got ${describe(v)}`);
  }
  return v as Obj;
}

function arr(v: unknown, field: string): readonly unknown[] {
  if (!Array.isArray(v)) throw new LedgerFormatError(field, `expected an array, got ${describe(v)}`);
  return v;
}

function str(o: Obj, name: string, at: string): string {
  const v = o[name];
  if (typeof v !== 'string')
    throw new LedgerFormatError(`${at}.${name}`, `expected a string, got ${describe(v)}`);
  return v;
}

function nonEmpty(o: Obj, name: string, at: string): string {
  const v = str(o, name, at);
  if (v === '') throw new LedgerFormatError(`${at}.${name}`, 'must not be empty');
  return v;
}

function int(o: Obj, name: string, at: string): number {
  const v = o[name];
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    throw new LedgerFormatError(`${at}.${name}`, `expected a non-negative integer, got ${describe(v)}`);
  }
  return v;
}

function optStr(o: Obj, name: string, at: string): string | undefined {
  return o[name] === undefined ? undefined : str(o, name, at);
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (typeof v === 'object') return 'an object';
  return String(v);
}

function parsePod(v: unknown, at: string): PodIdentity {
  const o = obj(v, at);
  const namespace = optStr(o, 'namespace', at);
  const name = optStr(o, 'name', at);
  const uid = optStr(o, 'uid', at);
  return {
    ...(namespace === undefined ? {} : { namespace }),
    ...(name === undefined ? {} : { name }),
    ...(uid === undefined ? {} : { uid }),
  };
}

function parseResource(v: unknown, at: string): OwnedResource {
  const o = obj(v, at);
  const kind = str(o, 'kind', at);
  switch (kind) {
    case 'address':
      return { kind, ip: nonEmpty(o, 'ip', at), eniId: nonEmpty(o, 'eniId', at) };
    case 'veth':
      return { kind, hostName: nonEmpty(o, 'hostName', at) };
    case 'hostRoute':
      return { kind, dst: nonEmpty(o, 'dst', at), dev: nonEmpty(o, 'dev', at) };
    case 'rule': {
      const from = optStr(o, 'from', at);
      const to = optStr(o, 'to', at);
      return {
        kind,
        priority: int(o, 'priority', at),
        table: int(o, 'table', at),
        ...(from === undefined ? {} : { from }),
        ...(to === undefined ? {} : { to }),
      };
    }
    case 'snat':
      return { kind, ip: nonEmpty(o, 'ip', at) };
    default:
      throw new LedgerFormatError(`${at}.kind`, `unknown resource kind ${describe(kind)}`);
  }
}

function parsePhase(o: Obj, at: string): { phase?: 'adding' } {
  if (o.phase === undefined) return {};
  if (o.phase === 'adding') return { phase: 'adding' };
  throw new LedgerFormatError(`${at}.phase`, `expected "adding" or absent, got ${describe(o.phase)}`);
}

function parseNetnsId(o: Obj, at: string): { netnsId?: string } {
  if (o.netnsId === undefined) return {};
  return { netnsId: nonEmpty(o, 'netnsId', at) };
}

function parseAttachment(v: unknown, at: string): Attachment {
  const o = obj(v, at);
  const k = obj(o.key, `${at}.key`);
  return {
    ...parsePhase(o, at),
    ...parseNetnsId(o, at),
    key: {
      network: nonEmpty(k, 'network', `${at}.key`),
      containerId: nonEmpty(k, 'containerId', `${at}.key`),
      ifName: nonEmpty(k, 'ifName', `${at}.key`),
    },
    pod: parsePod(o.pod, `${at}.pod`),
    netns: str(o, 'netns', at),
    ip: nonEmpty(o, 'ip', at),
    eniId: nonEmpty(o, 'eniId', at),
    routeTable: int(o, 'routeTable', at),
    hostVeth: str(o, 'hostVeth', at),
    mtu: int(o, 'mtu', at),
    createdAt: int(o, 'createdAt', at),
    resources: arr(o.resources, `${at}.resources`).map((r, i) => parseResource(r, `${at}.resources[${i}]`)),
  };
}

function parseCooling(v: unknown, at: string): CoolingAddress {
  const o = obj(v, at);
  return { ip: nonEmpty(o, 'ip', at), eniId: nonEmpty(o, 'eniId', at), freedAt: int(o, 'freedAt', at) };
}

/** Parses a decoded JSON value into a snapshot, or throws LedgerFormatError naming the bad field. */
export function parseLedgerSnapshot(json: unknown): LedgerSnapshot {
  const o = obj(json, '(root)');
  const version = o.schemaVersion;
  if (version !== LEDGER_SCHEMA_VERSION) {
    const problem =
      typeof version === 'number' && version > LEDGER_SCHEMA_VERSION
        ? `version ${version} is newer than this agent understands (${LEDGER_SCHEMA_VERSION})`
        : `expected ${LEDGER_SCHEMA_VERSION}, got ${describe(version)}`;
    throw new LedgerFormatError('schemaVersion', problem);
  }
  const attachments = arr(o.attachments, 'attachments').map((a, i) =>
    parseAttachment(a, `attachments[${i}]`),
  );
  const cooling = arr(o.cooling, 'cooling').map((c, i) => parseCooling(c, `cooling[${i}]`));
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
  return { schemaVersion: LEDGER_SCHEMA_VERSION, attachments, cooling };
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
