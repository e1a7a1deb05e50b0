// One coordination.k8s.io/v1 Lease, read and written through the agent's own client: what leader
// election among the cluster's agents holds (who leads, since when, for how long), and the small
// annotations the leader publishes on it. Parsed here, at the edge. Every write carries the
// resourceVersion it was read at, so the API server refuses it (409 Conflict) when another agent
// wrote in between: two agents can never both believe a write of theirs made them the holder.
import type { KubeApiConfig } from './kube-api-config.ts';
import { apiStatus, KubeClient } from './kube-client.ts';

export const LEASE_API_VERSION = 'coordination.k8s.io/v1';

/** A Lease as the agent uses it. */
export interface LeaseRecord {
  readonly holder: string | undefined;
  readonly leaseDurationSeconds: number;
  /** RFC 3339 with microseconds, as the API server stores MicroTime. */
  readonly acquireTime: string | undefined;
  readonly renewTime: string | undefined;
  readonly transitions: number;
  readonly annotations: Readonly<Record<string, string>>;
}

export interface StoredLease extends LeaseRecord {
  readonly resourceVersion: string;
}

/** Where the Lease is: `namespace/name`. */
export interface LeaseName {
  readonly namespace: string;
  readonly name: string;
}

export interface Leases {
  /** The Lease, or undefined when there is none. */
  read(): Promise<StoredLease | undefined>;
  /** Creates it; 'taken' when another agent created it first. */
  create(record: LeaseRecord): Promise<StoredLease | 'taken'>;
  /** Replaces it if it is still at `resourceVersion`; 'conflict' when another agent wrote since. */
  update(resourceVersion: string, record: LeaseRecord): Promise<StoredLease | 'conflict'>;
}

type Obj = Record<string, unknown>;

function obj(v: unknown): Obj | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : undefined;
}

/** A Lease as the API answers it; what is not one fails, naming the field. */
export function parseLease(body: unknown, where: LeaseName): StoredLease {
  const what = `Lease ${where.namespace}/${where.name}`;
  const meta = obj(obj(body)?.metadata);
  const spec = obj(obj(body)?.spec) ?? {};
  const resourceVersion = meta?.resourceVersion;
  if (typeof resourceVersion !== 'string' || resourceVersion === '') {
    throw new Error(`${what}: the API's answer has no metadata.resourceVersion`);
  }
  const text = (field: string): string | undefined => {
    const v = spec[field];
    if (v === undefined || v === null || v === '') return undefined;
    if (typeof v !== 'string') throw new Error(`${what}: spec.${field} is not a string`);
    return v;
  };
  const int = (field: string, fallback: number): number => {
    const v = spec[field];
    if (v === undefined || v === null) return fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
      throw new Error(`${what}: spec.${field} is not a whole number`);
    }
    return v;
  };
  const annotations: Record<string, string> = {};
  for (const [k, v] of Object.entries(obj(meta?.annotations) ?? {})) {
    if (typeof v !== 'string') throw new Error(`${what}: annotation ${k} is not a string`);
    annotations[k] = v;
  }
  return {
    resourceVersion,
    holder: text('holderIdentity'),
    leaseDurationSeconds: int('leaseDurationSeconds', 0),
    acquireTime: text('acquireTime'),
    renewTime: text('renewTime'),
    transitions: int('leaseTransitions', 0),
    annotations,
  };
}

function leaseBody(where: LeaseName, record: LeaseRecord, resourceVersion?: string): Obj {
  return {
    apiVersion: LEASE_API_VERSION,
    kind: 'Lease',
    metadata: {
      name: where.name,
      namespace: where.namespace,
      annotations: { ...record.annotations },
      ...(resourceVersion === undefined ? {} : { resourceVersion }),
    },
    spec: {
      ...(record.holder === undefined ? {} : { holderIdentity: record.holder }),
      leaseDurationSeconds: record.leaseDurationSeconds,
      ...(record.acquireTime === undefined ? {} : { acquireTime: record.acquireTime }),
      ...(record.renewTime === undefined ? {} : { renewTime: record.renewTime }),
      leaseTransitions: record.transitions,
    },
  };
}

export class KubeLeases implements Leases {
  readonly #client: Pick<KubeClient, 'request'>;
  readonly #where: LeaseName;
  readonly #collection: string;
  readonly #path: string;

  constructor(client: Pick<KubeClient, 'request'>, where: LeaseName) {
    this.#client = client;
    this.#where = where;
    this.#collection = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(where.namespace)}/leases`;
    this.#path = `${this.#collection}/${encodeURIComponent(where.name)}`;
  }

  async read(): Promise<StoredLease | undefined> {
    try {
      return parseLease(await this.#client.request('GET', this.#path), this.#where);
    } catch (err) {
      if (apiStatus(err) === 404) return undefined;
      throw err;
    }
  }

  async create(record: LeaseRecord): Promise<StoredLease | 'taken'> {
    try {
      return parseLease(
        await this.#client.request('POST', this.#collection, leaseBody(this.#where, record)),
        this.#where,
      );
    } catch (err) {
      if (apiStatus(err) === 409) return 'taken';
      throw err;
    }
  }

  async update(resourceVersion: string, record: LeaseRecord): Promise<StoredLease | 'conflict'> {
    try {
      const body = leaseBody(this.#where, record, resourceVersion);
      return parseLease(await this.#client.request('PUT', this.#path, body), this.#where);
    } catch (err) {
      if (apiStatus(err) === 409) return 'conflict';
      throw err;
    }
  }
}

/** `namespace/name` of a setting, checked. */
export function parseLeaseName(text: string): LeaseName {
  const m = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-.a-z0-9]*[a-z0-9])?)$/.exec(text);
  if (m === null) throw new Error(`${JSON.stringify(text)} is not NAMESPACE/NAME of a Lease`);
  return { namespace: m[1] ?? '', name: m[3] ?? '' };
}

export function kubeLeases(api: KubeApiConfig, where: LeaseName, timeoutMs = 5000): KubeLeases {
  return new KubeLeases(new KubeClient(api, { timeoutMs }), where);
}
