// EC2's request rate limiting, per account and region: one token bucket per API action, sized by
// the action's category unless EC2 lists the action with its own size ("Request throttling for
// the Amazon EC2 API": non-mutating Describe*/List*/Search*/Get* 100 tokens refilled at 20/s; a
// few of them, asked without a filter and without pagination, draw from a smaller bucket of their
// own, 50 at 10/s; mutating actions 50 at 5/s; uncategorized actions their own, e.g.
// AssignPrivateIpAddresses and CreateNetworkInterface 100 at 5/s). A request takes one token; one
// that finds its bucket empty is answered RequestLimitExceeded (HTTP 503) and takes none. Tokens
// come back continuously at the refill rate, up to the capacity.
import { Ec2Error } from './error.ts';
import type { QueryParams } from './params.ts';

export interface BucketLimit {
  /** Most tokens the bucket holds: how many requests may go at once after a quiet time. */
  readonly capacity: number;
  /** Tokens added per second (may be fractional). */
  readonly refillPerSecond: number;
}

export interface ThrottlingSettings {
  /** false: every request is let through (the emulator as it was before it modelled EC2's limits). */
  readonly enabled: boolean;
  /** Describe*, List*, Search*, Get* not listed in `actions`. */
  readonly nonMutating: BucketLimit;
  /** The listed non-mutating actions asked without a filter and without pagination. */
  readonly unfilteredNonMutating: BucketLimit;
  /** Every other action not listed in `actions`. */
  readonly mutating: BucketLimit;
  /** EC2's uncategorized actions: a bucket size and refill rate of their own. */
  readonly actions: Readonly<Record<string, BucketLimit>>;
  /** Multiplies every capacity and refill rate (0.5: EC2's limits halved), default 1. */
  readonly scale: number;
}

/** The non-mutating actions that draw from the smaller bucket when asked unfiltered and unpaginated. */
const UNFILTERED_ACTIONS: ReadonlySet<string> = new Set([
  'DescribeInstances',
  'DescribeInstanceStatus',
  'DescribeNetworkInterfaces',
  'DescribeSecurityGroups',
  'DescribeSnapshots',
  'DescribeSpotInstanceRequests',
  'DescribeVolumes',
]);

/** EC2's published defaults, for the actions an agent and the lab use. */
export const EC2_THROTTLING: ThrottlingSettings = {
  enabled: true,
  nonMutating: { capacity: 100, refillPerSecond: 20 },
  unfilteredNonMutating: { capacity: 50, refillPerSecond: 10 },
  mutating: { capacity: 50, refillPerSecond: 5 },
  actions: {
    AssignIpv6Addresses: { capacity: 100, refillPerSecond: 5 },
    AssignPrivateIpAddresses: { capacity: 100, refillPerSecond: 5 },
    CreateNetworkInterface: { capacity: 100, refillPerSecond: 5 },
    CreateTags: { capacity: 100, refillPerSecond: 10 },
    DeleteNetworkInterface: { capacity: 100, refillPerSecond: 5 },
    DeleteTags: { capacity: 100, refillPerSecond: 10 },
    ModifyNetworkInterfaceAttribute: { capacity: 100, refillPerSecond: 5 },
    UnassignPrivateIpAddresses: { capacity: 100, refillPerSecond: 5 },
  },
  scale: 1,
};

/** A request's bucket: its action's, or the smaller one an unfiltered, unpaginated describe uses. */
export function bucketOf(action: string, p: QueryParams): string {
  if (!UNFILTERED_ACTIONS.has(action)) return action;
  const filtered = p.get('Filter.1.Name') !== undefined;
  const paginated = p.get('MaxResults') !== undefined || p.get('NextToken') !== undefined;
  return filtered || paginated ? action : `${action} (unfiltered)`;
}

/** The limit of a bucket (as bucketOf names it) under `s`, scale applied. */
export function limitOf(s: ThrottlingSettings, bucket: string): BucketLimit {
  const unfiltered = bucket.endsWith(' (unfiltered)');
  const action = unfiltered ? bucket.slice(0, -' (unfiltered)'.length) : bucket;
  const base =
    (unfiltered ? s.unfilteredNonMutating : s.actions[action]) ??
    (/^(Describe|List|Search|Get)/.test(action) ? s.nonMutating : s.mutating);
  return { capacity: base.capacity * s.scale, refillPerSecond: base.refillPerSecond * s.scale };
}

function checkLimit(name: string, l: BucketLimit): void {
  if (!(l.capacity >= 1) || !(l.refillPerSecond > 0) || !Number.isFinite(l.refillPerSecond))
    throw new Error(`${name}: capacity must be >= 1 and refillPerSecond > 0, got ${JSON.stringify(l)}`);
}

/** `change` on top of `base`; throws naming the field when a value cannot be a bucket's. */
export function mergeThrottling(base: ThrottlingSettings, change: unknown): ThrottlingSettings {
  if (typeof change !== 'object' || change === null || Array.isArray(change))
    throw new Error('throttling settings must be a JSON object');
  const c = change as Record<string, unknown>;
  const known = ['enabled', 'nonMutating', 'unfilteredNonMutating', 'mutating', 'actions', 'scale'];
  for (const key of Object.keys(c))
    if (!known.includes(key))
      throw new Error(`unknown throttling setting ${key} (known: ${known.join(', ')})`);
  const limit = (name: string, v: unknown, fallback: BucketLimit): BucketLimit => {
    if (v === undefined) return fallback;
    const l = v as Partial<BucketLimit>;
    const merged = {
      capacity: typeof l.capacity === 'number' ? l.capacity : fallback.capacity,
      refillPerSecond: typeof l.refillPerSecond === 'number' ? l.refillPerSecond : fallback.refillPerSecond,
    };
    checkLimit(name, merged);
    return merged;
  };
  if (c.enabled !== undefined && typeof c.enabled !== 'boolean') throw new Error('enabled must be a boolean');
  if (c.scale !== undefined && !(typeof c.scale === 'number' && c.scale > 0))
    throw new Error(`scale must be a number > 0, got ${JSON.stringify(c.scale)}`);
  const actions: Record<string, BucketLimit> = { ...base.actions };
  if (c.actions !== undefined) {
    if (typeof c.actions !== 'object' || c.actions === null) throw new Error('actions must be an object');
    for (const [action, v] of Object.entries(c.actions))
      actions[action] = limit(`actions.${action}`, v, base.actions[action] ?? base.mutating);
  }
  return {
    enabled: (c.enabled as boolean | undefined) ?? base.enabled,
    nonMutating: limit('nonMutating', c.nonMutating, base.nonMutating),
    unfilteredNonMutating: limit(
      'unfilteredNonMutating',
      c.unfilteredNonMutating,
      base.unfilteredNonMutating,
    ),
    mutating: limit('mutating', c.mutating, base.mutating),
    actions,
    scale: (c.scale as number | undefined) ?? base.scale,
  };
}

interface Bucket {
  tokens: number;
  updatedAt: number;
}

/** The account's buckets in one region. */
export class RequestThrottling {
  readonly #now: () => number;
  readonly #buckets = new Map<string, Bucket>();
  #settings: ThrottlingSettings;

  /** `nowMs`: a monotonic enough clock in ms (the emulator's). */
  constructor(settings: ThrottlingSettings, nowMs: () => number) {
    this.#settings = settings;
    this.#now = nowMs;
  }

  get settings(): ThrottlingSettings {
    return this.#settings;
  }

  /** New limits; every bucket keeps its tokens, cut to its new capacity. */
  set(settings: ThrottlingSettings): void {
    for (const [name, b] of this.#buckets) this.#refill(name, b);
    this.#settings = settings;
    for (const [name, b] of this.#buckets) b.tokens = Math.min(b.tokens, limitOf(settings, name).capacity);
  }

  /** Takes the request's token, or throws RequestLimitExceeded as EC2 answers it (503). */
  admit(bucket: string): void {
    if (!this.#settings.enabled) return;
    const b = this.#bucket(bucket);
    this.#refill(bucket, b);
    if (b.tokens < 1) throw new Ec2Error('RequestLimitExceeded', 'Request limit exceeded.', 503);
    b.tokens -= 1;
  }

  /** Every bucket used so far: its limit and the tokens it holds now. */
  state(): Record<string, BucketLimit & { readonly tokens: number }> {
    const out: Record<string, BucketLimit & { readonly tokens: number }> = {};
    for (const [name, b] of [...this.#buckets].sort(([a], [z]) => a.localeCompare(z))) {
      this.#refill(name, b);
      out[name] = { ...limitOf(this.#settings, name), tokens: Math.floor(b.tokens * 100) / 100 };
    }
    return out;
  }

  #bucket(name: string): Bucket {
    let b = this.#buckets.get(name);
    if (b === undefined) {
      b = { tokens: limitOf(this.#settings, name).capacity, updatedAt: this.#now() };
      this.#buckets.set(name, b);
    }
    return b;
  }

  #refill(name: string, b: Bucket): void {
    const now = this.#now();
    const { capacity, refillPerSecond } = limitOf(this.#settings, name);
    b.tokens = Math.min(capacity, b.tokens + (Math.max(0, now - b.updatedAt) / 1000) * refillPerSecond);
    b.updatedAt = now;
  }
}
