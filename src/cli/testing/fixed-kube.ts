// A Kubernetes API that answers GETs of fixed paths with fixed objects, and 404s the rest, for
// tests of what the CLI reads from the API (the audit's census Lease, its pod lists).
import type { KubeGet } from '../audit/sources.ts';

export function fixedKube(objects: Readonly<Record<string, unknown>>): KubeGet {
  return (path) => {
    const found = objects[path];
    return found === undefined
      ? Promise.reject(new Error(`GET ${path}: 404 Not Found`))
      : Promise.resolve(found);
  };
}
