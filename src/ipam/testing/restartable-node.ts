// Test support for kill -9 tests of the pool manager: a node whose fake cloud and ledger store
// outlive the manager. A "kill" leaves a manager hanging at a chosen step (a cloud call or the
// ledger write that never returns) and drops it; a new incarnation opens the same store, as an
// agent restarted by its supervisor reads the same ledger file, and talks to the same cloud.

import type { EniInfo } from '../../cloud/cloud.ts';
import type { LedgerSnapshot } from '../../ledger/format/snapshot.ts';
import { Ledger } from '../../ledger/ledger.ts';
import type { LedgerStore } from '../../ledger/storage/store.ts';
import { MemoryLedgerStore } from '../../ledger/testing/memory-store.ts';
import { AddressPool } from '../pool/pool.ts';
import { PoolManager, type PoolManagerDeps } from '../pool/pool-manager.ts';
import type { WarmPoolTargets } from '../pool/targets.ts';
import { FakeCloud, type FakeCloudOptions } from './fake-cloud.ts';

/** A ledger store whose writes can be made to hang (the agent dies while writing). */
export class HangingLedgerStore implements LedgerStore {
  readonly #inner = new MemoryLedgerStore();
  #hang: (() => void) | undefined;

  #skip = 0;

  /**
   * A write never completes (and never reaches the disk): the next one, or the one after `skip`
   * more that complete. Resolves when it starts.
   */
  hangNextWrite(skip = 0): Promise<void> {
    this.#skip = skip;
    return new Promise((reached) => {
      this.#hang = reached;
    });
  }

  load(): Promise<LedgerSnapshot | undefined> {
    return this.#inner.load();
  }

  save(snapshot: LedgerSnapshot): Promise<void> {
    const hang = this.#hang;
    if (hang === undefined) return this.#inner.save(snapshot);
    if (this.#skip > 0) {
      this.#skip--;
      return this.#inner.save(snapshot);
    }
    this.#hang = undefined;
    hang();
    return new Promise(() => {});
  }
}

export type KillableCall = 'createEni' | 'attachEni' | 'detachEni' | 'deleteEni';

export interface Incarnation {
  readonly manager: PoolManager;
  readonly pool: AddressPool;
  readonly ledger: Ledger;
  /** ENIs (other than the primary, as the agent's hook) whose link this incarnation set up, and tore down. */
  readonly linked: string[];
  readonly tornDown: string[];
  readonly logs: string[];
}

export class RestartableNode {
  readonly cloud: FakeCloud;
  readonly store = new HangingLedgerStore();
  readonly clock = { t: 1_000_000, now: (): number => this.clock.t };
  readonly #targets: WarmPoolTargets;
  readonly #deps: Partial<PoolManagerDeps>;
  #hangTeardown: (() => void) | undefined;

  constructor(
    options: FakeCloudOptions & { targets?: Partial<WarmPoolTargets>; deps?: Partial<PoolManagerDeps> },
  ) {
    this.cloud = new FakeCloud(options);
    this.#targets = { warmEniTarget: 1, cooldownSeconds: 30, ...options.targets };
    this.#deps = options.deps ?? {};
  }

  /** Starts an agent's pool manager on the node's ledger and cloud (init included). */
  async start(): Promise<Incarnation> {
    const ledger = await Ledger.open(this.store, this.clock);
    const pool = new AddressPool({ cooldownMs: this.#targets.cooldownSeconds * 1000 });
    const linked: string[] = [];
    const tornDown: string[] = [];
    const logs: string[] = [];
    const record = (level: string) => (msg: string, fields?: Record<string, unknown>) =>
      logs.push(`${level} ${msg} ${JSON.stringify(fields ?? {})}`);
    const manager = new PoolManager({
      cloud: this.cloud,
      pool,
      clock: this.clock,
      log: { info: record('info'), warn: record('warn'), error: record('error') },
      metadata: this.cloud.meta,
      limits: this.cloud.limits,
      targets: this.#targets,
      ledger,
      onEniAttached: async (eni: EniInfo) => {
        if (eni.deviceNumber !== 0) linked.push(eni.eniId);
      },
      onEniDetaching: async (eni: EniInfo) => {
        const hang = this.#hangTeardown;
        this.#hangTeardown = undefined;
        if (hang) {
          hang();
          await new Promise(() => {});
        }
        tornDown.push(eni.eniId);
      },
      ...this.#deps,
    });
    await manager.init({ configureLinks: true });
    return { manager, pool, ledger, linked, tornDown, logs };
  }

  /**
   * The next `method` call never returns: the agent is killed during it, before the cloud acted on
   * it or (`applied`) after. Resolves when the call is reached; the call is normal again after.
   */
  killDuring(method: KillableCall, applied: boolean): Promise<void> {
    const cloud = this.cloud;
    const original = cloud[method] as (...args: unknown[]) => Promise<unknown>;
    return new Promise((reached) => {
      const hanging = async (...args: unknown[]): Promise<never> => {
        Object.assign(cloud, { [method]: original });
        if (applied) await original.apply(cloud, args);
        reached();
        return new Promise<never>(() => {});
      };
      Object.assign(cloud, { [method]: hanging });
    });
  }

  /** The next ENI link teardown never returns (the agent is killed during it). */
  killDuringTeardown(): Promise<void> {
    return new Promise((reached) => {
      this.#hangTeardown = reached;
    });
  }

  /** ENIs EC2 has that are attached to nothing. */
  detachedEnis(): string[] {
    return [...this.cloud.enis.values()].filter((e) => e.attachment === undefined).map((e) => e.eniId);
  }
}
