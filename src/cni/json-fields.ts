// Typed reads of fields of decoded JSON. Every failure is a CniError with the caller's code
// and the field's path in `details`, so an operator sees which key was wrong.
import { CniError } from './errors.ts';

export type JsonObject = Readonly<Record<string, unknown>>;

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function expectObject(value: unknown, path: string, code: number): JsonObject {
  if (!isJsonObject(value)) throw new CniError(code, `${path} must be an object`);
  return value;
}

export function expectArray(value: unknown, path: string, code: number): readonly unknown[] {
  if (!Array.isArray(value)) throw new CniError(code, `${path} must be an array`);
  return value;
}

export function optionalString(obj: JsonObject, key: string, path: string, code: number): string | undefined {
  const v = obj[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw new CniError(code, `${path}.${key} must be a string`);
  return v;
}

export function requiredString(obj: JsonObject, key: string, path: string, code: number): string {
  const v = optionalString(obj, key, path, code);
  if (v === undefined || v === '') throw new CniError(code, `${path}.${key} is required`);
  return v;
}

export function optionalInteger(
  obj: JsonObject,
  key: string,
  path: string,
  code: number,
): number | undefined {
  const v = obj[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v)) {
    throw new CniError(code, `${path}.${key} must be an integer`);
  }
  return v;
}

export function optionalStringArray(
  obj: JsonObject,
  key: string,
  path: string,
  code: number,
): readonly string[] | undefined {
  const v = obj[key];
  if (v === undefined) return undefined;
  const arr = expectArray(v, `${path}.${key}`, code);
  return arr.map((item, i) => {
    if (typeof item !== 'string') throw new CniError(code, `${path}.${key}[${i}] must be a string`);
    return item;
  });
}
