// A PATCH of a status subresource (`nodes/{name}/status`), as the API server applies it: only
// `status` changes (the rest of the patch is ignored), a JSON merge patch replaces lists whole,
// and a strategic merge patch merges the lists Kubernetes declares with a merge key
// (NodeStatus.conditions and .addresses by `type`), so a writer of its own condition keeps
// everyone else's. Directives a client may add (`$setElementOrder/…`) are dropped.
import { isJsonObject, type Json, type JsonObject, mergePatch } from './objects.ts';

/** Lists of a status merged element by element, keyed by the field named. */
const MERGE_KEYS: Readonly<Record<string, string>> = { conditions: 'type', addresses: 'type' };

export function patchStatus(current: JsonObject, patch: unknown, strategic: boolean): JsonObject {
  if (!isJsonObject(patch)) throw new Error('patch must be a JSON object');
  const status = isJsonObject(patch.status) ? patch.status : {};
  const before = isJsonObject(current.status) ? current.status : {};
  const after = strategic ? strategicMerge(before, status) : mergePatch(before, status);
  return { ...current, status: after };
}

function strategicMerge(target: JsonObject, patch: JsonObject): JsonObject {
  const out: JsonObject = { ...target };
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith('$')) continue;
    const key = MERGE_KEYS[k];
    if (v === null) delete out[k];
    else if (key !== undefined && Array.isArray(v)) out[k] = mergeList(out[k], v, key);
    else if (isJsonObject(v)) out[k] = strategicMerge(isJsonObject(out[k]) ? out[k] : {}, v);
    else out[k] = v;
  }
  return out;
}

/** Elements of `patch` replace-merge those of `target` with the same key; new ones are appended. */
function mergeList(target: Json | undefined, patch: Json[], key: string): Json[] {
  const out: Json[] = Array.isArray(target) ? [...target] : [];
  for (const item of patch) {
    if (!isJsonObject(item) || typeof item[key] !== 'string') {
      throw new Error(`every element of a list merged by ${key} must name its ${key}`);
    }
    const i = out.findIndex((x) => isJsonObject(x) && x[key] === item[key]);
    if (item.$patch === 'delete') {
      if (i >= 0) out.splice(i, 1);
    } else if (i >= 0) out[i] = strategicMerge(out[i] as JsonObject, item);
    else out.push(strategicMerge({}, item));
  }
  return out;
}
