// The agent's state JSON (GET /v1/state) read once, at the edge, into what the status, pods and
// support-bundle views show. The reader is lenient: a field an older or newer agent lacks reads as
// absent, never as an error, so that the CLI still shows a node whose agent is of another version.

import type { SubnetCensusState } from '../agent/loops/subnet-census.ts';

type Json = Record<string, unknown>;

const obj = (v: unknown): Json =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {};
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

export interface AttachmentRow {
  readonly network: string;
  readonly containerId: string;
  readonly ifName: string;
  readonly namespace?: string;
  readonly pod?: string;
  readonly ip?: string;
  readonly eniId?: string;
  readonly hostVeth?: string;
  /** The branch binding (pods with their own security groups) and its VLAN, when it has one. */
  readonly branch?: { readonly key: string; readonly eniId?: string; readonly vlanId?: number };
  /** 'adding' while (or if a crash left) its ADD unfinished; 'ready' otherwise. */
  readonly phase: string;
  readonly createdAt?: number;
  readonly netns?: string;
}

export interface EniRow {
  readonly eniId: string;
  readonly deviceNumber?: number;
  readonly primaryIp?: string;
  readonly addresses: readonly { readonly ip: string; readonly kind: string; readonly owner?: string }[];
}

/** A pod's branch ENI (pods with their own security groups), from the agent's binding records. */
export interface BranchRow {
  readonly eniId: string;
  readonly vlanId?: number;
  readonly ip?: string;
  readonly namespace?: string;
  readonly pod?: string;
  /** The trunk's link on the node that carries its VLAN. */
  readonly trunkDev?: string;
}

/** The node's trunk ENI as the agent found it (null: pods ENIs on, no trunk yet). */
export interface TrunkRow {
  readonly eniId: string;
  readonly dev?: string;
}

export interface CloudErrorRow {
  readonly time: string;
  readonly action: string;
  readonly code: string;
  readonly message: string;
}

export interface CniErrorRow {
  readonly time: string;
  readonly command: string;
  readonly namespace?: string;
  readonly pod?: string;
  readonly containerId?: string;
  readonly code?: number;
  readonly message: string;
}

export interface NodeState {
  readonly instanceId?: string;
  readonly instanceType?: string;
  readonly pool: {
    readonly total: number;
    readonly assigned: number;
    readonly cooling: number;
    readonly available: number;
    readonly growthBlocked?: { readonly reason: string; readonly since?: number; readonly failures?: number };
    readonly syncDifferences: Readonly<Record<string, number>>;
    readonly syncLastError?: string;
    /** Differences with EC2 seen once, waiting for a later describe to confirm them. */
    readonly syncUnconfirmed: number;
    readonly lostEnis: readonly string[];
    readonly pendingEnis: number;
    readonly leakedEnisDeleted: number;
  };
  readonly enis: readonly EniRow[];
  /** Absent: pod ENIs are off on this node; null: on, and no trunk ENI found yet. */
  readonly trunk?: TrunkRow | null;
  readonly branches: readonly BranchRow[];
  readonly attachments: readonly AttachmentRow[];
  readonly recovery?: { readonly reason?: string; readonly held: number };
  readonly cloudErrors: readonly CloudErrorRow[];
  readonly recentErrors: readonly CniErrorRow[];
  /** DELs the plugin spooled that the agent has not applied yet, when the state says. */
  readonly spoolDepth?: number;
  /** The cluster's subnet census as this agent knows it, when it runs. */
  readonly census?: CensusRows;
}

/** The census as the agent's state shows it (loops/subnet-census.ts), read leniently. */
export type CensusRows = SubnetCensusState;

function censusRows(raw: unknown): CensusRows | undefined {
  const c = obj(raw);
  const role = str(c.role);
  if (role !== 'leader' && role !== 'follower' && role !== 'unknown') return undefined;
  const lastError = str(c.lastError);
  return {
    role,
    ...(lastError === undefined ? {} : { lastError }),
    subnets: arr(c.subnets).map((x) => {
      const r = obj(x);
      return {
        subnetId: str(r.subnetId) ?? '?',
        cidr: str(r.cidr) ?? '?',
        takenAt: str(r.takenAt) ?? '?',
        freePrefixes: num(r.freePrefixes) ?? 0,
        freeAddresses: num(r.freeAddresses) ?? 0,
        reservationsKnown: r.reservationsKnown === true,
        stale: r.stale === true,
      };
    }),
  };
}

function attachmentRow(raw: unknown, bindings: ReadonlyMap<string, Json>): AttachmentRow {
  const a = obj(raw);
  const key = obj(a.key);
  const pod = obj(a.pod);
  const branchKey = str(a.branch);
  const binding = branchKey === undefined ? undefined : bindings.get(branchKey);
  const opt = <K extends string, V>(k: K, v: V | undefined) => (v === undefined ? {} : { [k]: v });
  return {
    network: str(key.network) ?? '',
    containerId: str(key.containerId) ?? '',
    ifName: str(key.ifName) ?? '',
    ...opt('namespace', str(pod.namespace)),
    ...opt('pod', str(pod.name)),
    ...opt('ip', str(a.ip) ?? (binding === undefined ? undefined : str(binding.ip))),
    ...opt('eniId', str(a.eniId)),
    ...opt('hostVeth', str(a.hostVeth)),
    ...(branchKey === undefined
      ? {}
      : {
          branch: {
            key: branchKey,
            ...opt('eniId', str(obj(binding?.key).eniId)),
            ...opt('vlanId', num(binding?.vlanId)),
          },
        }),
    phase: str(a.phase) ?? 'ready',
    ...opt('createdAt', num(a.createdAt)),
    ...opt('netns', str(a.netns)),
  };
}

function eniRow(raw: unknown): EniRow {
  const e = obj(raw);
  const addresses = Object.entries(obj(e.addresses)).map(([ip, s]) => {
    const owner = str(obj(s).owner);
    return { ip, kind: str(obj(s).kind) ?? '?', ...(owner === undefined ? {} : { owner }) };
  });
  const deviceNumber = num(e.deviceNumber);
  const primaryIp = str(e.primaryIp);
  return {
    eniId: str(e.eniId) ?? '?',
    ...(deviceNumber === undefined ? {} : { deviceNumber }),
    ...(primaryIp === undefined ? {} : { primaryIp }),
    addresses,
  };
}

function branchRow(raw: unknown): BranchRow {
  const b = obj(raw);
  const pod = obj(b.pod);
  const optional = {
    vlanId: num(b.vlanId),
    ip: str(b.ip),
    namespace: str(pod.namespace),
    pod: str(pod.name),
    trunkDev: str(b.trunkDev),
  };
  return {
    eniId: str(obj(b.key).eniId) ?? '?',
    ...Object.fromEntries(Object.entries(optional).filter(([, v]) => v !== undefined)),
  };
}

function trunkRow(raw: unknown): TrunkRow | null | undefined {
  if (raw === null) return null;
  const t = obj(raw);
  const eniId = str(t.eniId);
  if (eniId === undefined) return undefined;
  const dev = str(t.dev);
  return { eniId, ...(dev === undefined ? {} : { dev }) };
}

function cloudErrorRow(raw: unknown): CloudErrorRow {
  const e = obj(raw);
  return {
    time: str(e.time) ?? '',
    action: str(e.action) ?? '',
    code: str(e.code) ?? '',
    message: str(e.message) ?? '',
  };
}

export function cniErrorRow(raw: unknown): CniErrorRow {
  const e = obj(raw);
  const optional = {
    namespace: str(e.namespace),
    pod: str(e.pod),
    containerId: str(e.containerId),
    code: num(e.code),
  };
  return {
    time: str(e.time) ?? '',
    command: str(e.command) ?? '',
    message: str(e.message) ?? '',
    ...Object.fromEntries(Object.entries(optional).filter(([, v]) => v !== undefined)),
  };
}

export function parseNodeState(raw: unknown): NodeState {
  const s = obj(raw);
  const pool = obj(s.pool);
  const stats = obj(pool.stats);
  const growth = obj(pool.growth);
  const sync = obj(pool.sync);
  const recovery = obj(s.recovery);
  const bindings = new Map(
    arr(s.bindings).map((b) => [`${str(obj(obj(b).key).podUid)}/${str(obj(obj(b).key).eniId)}`, obj(b)]),
  );
  const blocked = str(growth.blocked);
  const since = num(growth.since);
  const failures = num(growth.failures);
  const syncLastError = str(sync.lastError);
  const spoolDepth = num(s.spoolDepth) ?? num(obj(s.spool).depth);
  const census = censusRows(s.census);
  const trunk = 'trunk' in s ? trunkRow(s.trunk) : undefined;
  return {
    ...(str(s.instanceId) === undefined ? {} : { instanceId: str(s.instanceId) as string }),
    ...(str(s.instanceType) === undefined ? {} : { instanceType: str(s.instanceType) as string }),
    pool: {
      total: num(stats.total) ?? 0,
      assigned: num(stats.assigned) ?? 0,
      cooling: num(stats.cooling) ?? 0,
      available: num(stats.available) ?? 0,
      ...(blocked === undefined
        ? {}
        : {
            growthBlocked: {
              reason: blocked,
              ...(since === undefined ? {} : { since }),
              ...(failures === undefined ? {} : { failures }),
            },
          }),
      syncDifferences: Object.fromEntries(
        Object.entries(obj(sync.differences)).flatMap(([k, v]) =>
          num(v) === undefined ? [] : [[k, v as number]],
        ),
      ),
      ...(syncLastError === undefined ? {} : { syncLastError }),
      syncUnconfirmed: num(sync.unconfirmed) ?? 0,
      lostEnis: arr(sync.lostEnis).map((l) => str(obj(l).eniId) ?? str(l) ?? '?'),
      pendingEnis: arr(pool.pendingEnis).length,
      leakedEnisDeleted: num(pool.leakedEnisDeleted) ?? 0,
    },
    enis: arr(pool.enis).map(eniRow),
    ...(trunk === undefined ? {} : { trunk }),
    // Superseded bindings gave their ENI to another pod: no longer that pod's branch ENI.
    branches: arr(s.bindings)
      .filter((b) => obj(b).supersededBy === undefined)
      .map(branchRow),
    attachments: arr(s.attachments).map((a) => attachmentRow(a, bindings)),
    ...(recovery.active === true
      ? {
          recovery: {
            held: arr(recovery.held).length,
            ...(str(recovery.reason) ? { reason: str(recovery.reason) as string } : {}),
          },
        }
      : {}),
    cloudErrors: arr(s.cloudErrors).map(cloudErrorRow),
    recentErrors: arr(s.recentErrors).map(cniErrorRow),
    ...(spoolDepth === undefined ? {} : { spoolDepth }),
    ...(census === undefined ? {} : { census }),
  };
}
