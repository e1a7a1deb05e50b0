// JSON shapes of the Kubernetes slice: Status errors, merge patches, selectors.

export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export function isJsonObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function status(code: number, reason: string, message: string): JsonObject {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    code,
  };
}

/** RFC 7386 JSON merge patch (also what a strategic merge patch does to maps such as annotations). */
export function mergePatch(target: Json, patch: Json): Json {
  if (!isJsonObject(patch)) return patch;
  const out: JsonObject = isJsonObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k] ?? null, v);
  }
  return out;
}

/** A field selector such as `spec.nodeName=node-1,metadata.namespace!=kube-system`. */
export function parseFieldSelector(text: string | null): (obj: JsonObject) => boolean {
  if (text === null || text === '') return () => true;
  const terms = text.split(',').map((term) => {
    const m = /^([^!=]+)(==|!=|=)(.*)$/.exec(term);
    if (m === null) throw new Error(`invalid field selector term: ${term}`);
    const [, path = '', op, value] = m;
    return { path: path.split('.'), negate: op === '!=', value };
  });
  return (obj) =>
    terms.every(({ path, negate, value }) => {
      let v: Json | undefined = obj;
      for (const p of path) v = isJsonObject(v) ? v[p] : undefined;
      const actual = typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v);
      return (actual === value) !== negate;
    });
}

/** Equality-based label selector: `app=web,tier!=db,present`. */
export function parseLabelSelector(text: string | null): (obj: JsonObject) => boolean {
  if (text === null || text === '') return () => true;
  const terms = text.split(',').map((term) => {
    const m = /^([^!=]+)(?:(==|!=|=)(.*))?$/.exec(term);
    if (m === null) throw new Error(`invalid label selector term: ${term}`);
    return { key: m[1] ?? '', op: m[2], value: m[3] };
  });
  return (obj) => {
    const meta = obj.metadata;
    const labels = isJsonObject(meta) && isJsonObject(meta.labels) ? meta.labels : {};
    return terms.every(({ key, op, value }) => {
      const v = labels[key];
      if (op === undefined) return v !== undefined;
      return (v === value) !== (op === '!=');
    });
  };
}
