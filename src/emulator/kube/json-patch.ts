// JSON Patch (RFC 6902), the PATCH content type @kubernetes/client-node 1.x sends by default
// (application/json-patch+json): add, remove, replace and test. Paths are JSON Pointers (RFC 6901),
// so a label key's '/' is written '~1' (/metadata/labels/vpc.amazonaws.com~1has-trunk-attached).
import { KubeError } from './object-store.ts';
import { isJsonObject, type Json, type JsonObject } from './objects.ts';

type Operation =
  | { op: 'add' | 'replace' | 'test'; path: string; value: Json }
  | { op: 'remove'; path: string };

function invalid(message: string): KubeError {
  return new KubeError(422, 'Invalid', `json patch: ${message}`);
}

function parseOperations(patch: unknown): Operation[] {
  if (!Array.isArray(patch))
    throw new KubeError(400, 'BadRequest', 'a JSON patch must be an array of operations');
  return patch.map((item: unknown, i) => {
    if (!isJsonObject(item) || typeof item.op !== 'string' || typeof item.path !== 'string') {
      throw invalid(`operation ${i} needs string "op" and "path"`);
    }
    const { op, path } = item;
    if (op === 'remove') return { op, path };
    if (op === 'add' || op === 'replace' || op === 'test') {
      if (!('value' in item)) throw invalid(`operation ${i} (${op} ${path}) needs a "value"`);
      return { op, path, value: item.value as Json };
    }
    throw invalid(`operation ${i}: op ${JSON.stringify(op)} is not supported (add, remove, replace, test)`);
  });
}

function tokens(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw invalid(`path ${JSON.stringify(path)} must start with '/'`);
  return path
    .slice(1)
    .split('/')
    .map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** The container that holds the last token of `path`, and that token. */
function parentOf(doc: JsonObject, path: string): { parent: JsonObject | Json[]; key: string } {
  const parts = tokens(path);
  const key = parts.pop();
  if (key === undefined) throw invalid('the whole document cannot be patched');
  let node: Json = doc;
  for (const part of parts) {
    const next: Json | undefined = Array.isArray(node)
      ? node[Number(part)]
      : isJsonObject(node)
        ? node[part]
        : undefined;
    if (next === undefined) throw invalid(`path ${path}: ${part} does not exist`);
    node = next;
  }
  if (!Array.isArray(node) && !isJsonObject(node))
    throw invalid(`path ${path}: parent is not an object or array`);
  return { parent: node, key };
}

function arrayIndex(arr: Json[], key: string, path: string, forAdd: boolean): number {
  if (forAdd && key === '-') return arr.length;
  const index = Number(key);
  const max = forAdd ? arr.length : arr.length - 1;
  if (!/^\d+$/.test(key) || index > max) throw invalid(`path ${path}: index ${key} is out of range`);
  return index;
}

export function applyJsonPatch(target: JsonObject, patch: unknown): JsonObject {
  const doc = structuredClone(target);
  for (const op of parseOperations(patch)) {
    const { parent, key } = parentOf(doc, op.path);
    if (Array.isArray(parent)) {
      const index = arrayIndex(parent, key, op.path, op.op === 'add');
      if (op.op === 'add') parent.splice(index, 0, op.value);
      else if (op.op === 'remove') parent.splice(index, 1);
      else if (op.op === 'replace') parent[index] = op.value;
      else if (JSON.stringify(parent[index]) !== JSON.stringify(op.value))
        throw invalid(`test of ${op.path} failed`);
      continue;
    }
    const present = Object.hasOwn(parent, key);
    if (op.op !== 'add' && !present) throw invalid(`path ${op.path} does not exist`);
    if (op.op === 'add' || op.op === 'replace') parent[key] = op.value;
    else if (op.op === 'remove') delete parent[key];
    else if (JSON.stringify(parent[key]) !== JSON.stringify(op.value))
      throw invalid(`test of ${op.path} failed`);
  }
  return doc;
}
