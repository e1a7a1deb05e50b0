// Pod metadata from the Kubernetes API, used on ADD only (DESIGN.md, Pods): the pod's UID and
// annotations. A pod the API does not know, or no API at all (cnitool, podman), means regular
// networking; only branch-ENI networking needs the pod's annotation.
import { readFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { KubeApiConfig } from './kube-api-config.ts';

export interface PodMetadata {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly nodeName: string | undefined;
  readonly annotations: Readonly<Record<string, string>>;
}

export interface PodSource {
  /** undefined when the API does not know the pod (or there is no API). Throws only on transport errors. */
  lookup(namespace: string, name: string): Promise<PodMetadata | undefined>;
}

export const noPodSource: PodSource = { lookup: async () => undefined };

export class PodLookupError extends Error {
  override name = 'PodLookupError';
}

function stringRecord(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof v !== 'object' || v === null) return out;
  for (const [k, val] of Object.entries(v)) if (typeof val === 'string') out[k] = val;
  return out;
}

/** Parses a core/v1 Pod at the edge. */
export function parsePod(body: unknown): PodMetadata {
  if (typeof body !== 'object' || body === null) throw new PodLookupError('pod is not an object');
  const { metadata, spec } = body as { metadata?: Record<string, unknown>; spec?: Record<string, unknown> };
  const name = metadata?.name;
  const namespace = metadata?.namespace;
  const uid = metadata?.uid;
  if (typeof name !== 'string' || typeof namespace !== 'string' || typeof uid !== 'string') {
    throw new PodLookupError('pod lacks metadata.name, metadata.namespace or metadata.uid');
  }
  const nodeName = spec?.nodeName;
  return {
    name,
    namespace,
    uid,
    nodeName: typeof nodeName === 'string' ? nodeName : undefined,
    annotations: stringRecord(metadata?.annotations),
  };
}

/** GETs pods from the API with a short timeout: ADD must not hang on an unreachable API server. */
export class KubePodSource implements PodSource {
  constructor(
    private readonly api: KubeApiConfig,
    private readonly timeoutMs = 3000,
  ) {}

  async lookup(namespace: string, name: string): Promise<PodMetadata | undefined> {
    const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`;
    const { status, body } = await this.#get(path);
    if (status === 404) return undefined;
    if (status !== 200) throw new PodLookupError(`GET ${path}: HTTP ${status}`);
    return parsePod(JSON.parse(body));
  }

  async #get(path: string): Promise<{ status: number; body: string }> {
    const url = new URL(path, this.api.baseUrl);
    const headers: Record<string, string> = { accept: 'application/json' };
    const secure = url.protocol === 'https:';
    if (this.api.token !== undefined)
      headers.authorization = `Bearer ${(await readFile(this.api.token, 'utf8')).trim()}`;
    const ca = secure && this.api.caFile !== undefined ? await readFile(this.api.caFile) : undefined;
    return new Promise((resolve, reject) => {
      const req = (secure ? httpsRequest : httpRequest)(
        url,
        { method: 'GET', headers, timeout: this.timeoutMs, ...(ca ? { ca } : {}) },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
          );
          res.on('error', reject);
        },
      );
      req.on('timeout', () =>
        req.destroy(new PodLookupError(`GET ${url.href}: no answer in ${this.timeoutMs} ms`)),
      );
      req.on('error', (err) =>
        reject(err instanceof PodLookupError ? err : new PodLookupError(`GET ${url.href}: ${err.message}`)),
      );
      req.end();
    });
  }
}
