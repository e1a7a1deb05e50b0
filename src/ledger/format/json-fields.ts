// Field-by-field reading of the ledger's JSON. Every problem names its field path
// (`attachments[2].resources[1].table`), so an operator can find what is wrong in the file.
import type { FieldReader } from '../../plan/kinds.ts';

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

export type Obj = Record<string, unknown>;

export function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (typeof v === 'object') return 'an object';
  return String(v);
}

export function obj(v: unknown, field: string): Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw new LedgerFormatError(field, `expected an object, got ${describe(v)}`);
  }
  return v as Obj;
}

export function arr(v: unknown, field: string): readonly unknown[] {
  if (!Array.isArray(v)) throw new LedgerFormatError(field, `expected an array, got ${describe(v)}`);
  return v;
}

export function str(o: Obj, name: string, at: string): string {
  const v = o[name];
  if (typeof v !== 'string')
    throw new LedgerFormatError(`${at}.${name}`, `expected a string, got ${describe(v)}`);
  return v;
}

export function nonEmpty(o: Obj, name: string, at: string): string {
  const v = str(o, name, at);
  if (v === '') throw new LedgerFormatError(`${at}.${name}`, 'must not be empty');
  return v;
}

export function int(o: Obj, name: string, at: string): number {
  const v = o[name];
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    throw new LedgerFormatError(`${at}.${name}`, `expected a non-negative integer, got ${describe(v)}`);
  }
  return v;
}

export function optStr(o: Obj, name: string, at: string): string | undefined {
  return o[name] === undefined ? undefined : str(o, name, at);
}

/** The resource kinds read their own fields through this (see src/plan/kinds). */
export function fieldReader(o: Obj, at: string): FieldReader {
  return {
    str: (name) => nonEmpty(o, name, at),
    optStr: (name) => (o[name] === undefined ? undefined : nonEmpty(o, name, at)),
    int: (name) => int(o, name, at),
    optInt: (name) => (o[name] === undefined ? undefined : int(o, name, at)),
    optBool(name) {
      const v = o[name];
      if (v === undefined || typeof v === 'boolean') return v;
      throw new LedgerFormatError(`${at}.${name}`, `expected true or false, got ${describe(v)}`);
    },
    oneOf(name, values) {
      const v = o[name];
      if (typeof v === 'string' && (values as readonly string[]).includes(v))
        return v as (typeof values)[number];
      throw new LedgerFormatError(
        `${at}.${name}`,
        `expected one of ${values.join(', ')}, got ${describe(v)}`,
      );
    },
    side(name) {
      const v = o[name];
      if (v === 'node' || v === 'pod') return v;
      throw new LedgerFormatError(`${at}.${name}`, `expected "node" or "pod", got ${describe(v)}`);
    },
  };
}
