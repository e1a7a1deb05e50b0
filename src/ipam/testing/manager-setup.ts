// Test support for the pool manager's unit tests: a manager over the fake cloud with a manual
// clock and recording hooks, helpers that drive passes to a fixed point, and a way to run the
// background loop on node:test's mocked timers instead of the wall clock.

import assert from 'node:assert/strict';
import type { Cloud, EniInfo, InstanceTypeLimits } from '../../cloud/cloud.ts';
import type { Attachment } from '../../plan/attachment.ts';
import { AddressPool } from '../pool/pool.ts';
import { PoolManager, type PoolManagerDeps } from '../pool/pool-manager.ts';
import type { WarmPoolTargets } from '../pool/targets.ts';
import { FakeCloud } from './fake-cloud.ts';

export interface ManagerSetup {
  readonly cloud: FakeCloud;
  readonly pool: AddressPool;
  readonly manager: PoolManager;
  readonly clock: { t: number; now(): number };
  readonly logs: string[];
  readonly attachedHook: EniInfo[];
  /** For each onEniAttached call: whether the ENI was already in the pool (it must not be). */
  readonly attachedWhileInPool: boolean[];
  /** Each onEniDetaching call: the ENI, and whether the pool still knew it or its addresses then. */
  readonly detachingHook: { eni: EniInfo; inPool: boolean }[];
}

export interface SetupOptions {
  readonly targets?: Partial<WarmPoolTargets>;
  readonly limits?: InstanceTypeLimits;
  readonly primarySecondaryIps?: number;
  readonly deps?: Partial<PoolManagerDeps>;
  readonly prepare?: (cloud: FakeCloud) => Promise<void> | void;
  /** What the manager talks to instead of the fake cloud itself (e.g. lagging describes). */
  readonly wrapCloud?: (cloud: FakeCloud, clock: { now(): number }) => Cloud | Promise<Cloud>;
  /** Run init() with configureLinks (default false, as the agent does today). */
  readonly configureLinks?: boolean;
}

export const T0 = 1_000_000;

/** Builds and inits a manager; `stopAll` stops every manager built so far (call it in afterEach). */
export function managerFactory(): {
  setup(opts?: SetupOptions): Promise<ManagerSetup>;
  stopAll(): Promise<void>;
} {
  const running: PoolManager[] = [];
  return {
    async setup(opts = {}) {
      const s = await buildManager(opts);
      running.push(s.manager);
      await s.manager.init({ configureLinks: opts.configureLinks === true });
      return s;
    },
    async stopAll() {
      for (const m of running.splice(0)) await m.stop();
    },
  };
}

async function buildManager(opts: SetupOptions): Promise<ManagerSetup> {
  const cloud = new FakeCloud({
    limits: opts.limits ?? { maxEnis: 3, ipsPerEni: 4 },
    primarySecondaryIps: opts.primarySecondaryIps ?? 0,
  });
  await opts.prepare?.(cloud);
  const targets: WarmPoolTargets = { warmEniTarget: 1, cooldownSeconds: 30, ...opts.targets };
  const clock = {
    t: T0,
    now() {
      return this.t;
    },
  };
  const pool = new AddressPool({ cooldownMs: targets.cooldownSeconds * 1000 });
  const logs: string[] = [];
  const attachedHook: EniInfo[] = [];
  const attachedWhileInPool: boolean[] = [];
  const detachingHook: { eni: EniInfo; inPool: boolean }[] = [];
  const record = (level: string) => (msg: string, fields?: Record<string, unknown>) =>
    logs.push(`${level} ${msg} ${JSON.stringify(fields ?? {})}`);
  const manager = new PoolManager({
    cloud: (await opts.wrapCloud?.(cloud, clock)) ?? cloud,
    pool,
    clock,
    log: { info: record('info'), warn: record('warn'), error: record('error') },
    metadata: cloud.meta,
    limits: cloud.limits,
    targets,
    onEniAttached: async (eni) => {
      attachedHook.push(eni);
      attachedWhileInPool.push(pool.eni(eni.eniId) !== undefined);
    },
    onEniDetaching: async (eni) => {
      const inPool = pool.eni(eni.eniId) !== undefined || eni.secondaryIps.some((ip) => pool.state(ip));
      detachingHook.push({ eni, inPool });
    },
    intervalMs: 10,
    retryBaseMs: 5,
    maxBackoffMs: 20,
    ...opts.deps,
  });
  return { cloud, pool, manager, clock, logs, attachedHook, attachedWhileInPool, detachingHook };
}

/** Applies decisions until there is nothing left to do; returns what was done. */
export async function settle(manager: PoolManager): Promise<string[]> {
  const done: string[] = [];
  for (let i = 0; i < 20; i++) {
    const d = await manager.runPass();
    if (d.kind === 'none') return done;
    done.push('count' in d ? `${d.kind} ${d.count}` : d.kind);
  }
  throw new Error(`pool did not settle: ${done.join(', ')}`);
}

/** Pods arrive one by one, the manager settling in between, until `pods` hold addresses. */
export async function burst(manager: PoolManager, pods: number): Promise<string[]> {
  const ips: string[] = [];
  for (let i = 0; i < pods; i++) {
    await settle(manager);
    const got = manager.allocate(`vpcnet/p${i}/eth0`);
    assert.ok(got, `pod ${i} got no address`);
    ips.push(got.ip);
  }
  await settle(manager);
  return ips;
}

export function attachedDevices(cloud: FakeCloud): number[] {
  return cloud.attached().map((e) => e.attachment?.deviceIndex ?? -1);
}

export function secondaryCounts(cloud: FakeCloud): number[] {
  return cloud.attached().map((e) => e.secondaryIps.length);
}

export function attachmentFor(id: string, ip: string, eniId = 'eni-primary'): Attachment {
  return {
    key: { network: 'vpcnet', containerId: id, ifName: 'eth0' },
    pod: {},
    netns: `/var/run/netns/${id}`,
    createdAt: 0,
    resources: [{ kind: 'vpcAddress', ip, eniId }],
  };
}

export { virtualTime } from '../../infra/testing/virtual-time.ts';
