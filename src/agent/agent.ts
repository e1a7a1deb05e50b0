// The node agent: rebuilds its state from ledger + kernel + cloud before it serves a request
// (durable before success; convergence), then serves CNI requests on its unix socket.
import { access } from 'node:fs/promises';
import type { Server } from 'node:http';
import { join } from 'node:path';
import type { Cloud, EniInfo, InstanceMetadata } from '../cloud/cloud.ts';
import type { Dataplane } from '../dataplane/dataplane.ts';
import { AddressPool, routeTableFor, subnetGateway } from '../ipam/pool.ts';
import { PoolManager } from '../ipam/manager.ts';
import type { WarmPoolTargets } from '../ipam/targets.ts';
import { attachmentKeyString, type Attachment } from '../ledger/attachment.ts';
import { Ledger } from '../ledger/ledger.ts';
import { FileLedgerStore } from '../ledger/store.ts';
import type { PodSource } from '../pods/pod-source.ts';
import type { AddressSource } from './address-source.ts';
import { handleCni } from './cni-handler.ts';
import type { AgentConfig } from './config.ts';
import type { OperationContext } from './context.ts';
import type { Logger } from './log.ts';
import { startRpcServer, stopRpcServer } from './rpc-server.ts';
import { PodSerializer } from './serializer.ts';
import { drainDelSpool } from './spool-drain.ts';
import { OperationStats } from './stats.ts';

export interface AgentDeps {
  readonly config: AgentConfig;
  readonly targets: WarmPoolTargets;
  readonly cloud: Cloud;
  readonly dataplane: Dataplane;
  readonly pods: PodSource;
  readonly log: Logger;
  readonly now: () => number;
  /** Pool manager loop period (ms). */
  readonly poolIntervalMs?: number;
}

export interface RunningAgent {
  readonly ledger: Ledger;
  readonly pool: AddressPool;
  stop(): Promise<void>;
}

async function pathExists(p: string): Promise<boolean> {
  try {
    await access(p);
    return true;
  } catch {
    return false;
  }
}

function poolAddressSource(pool: AddressPool, manager: PoolManager, now: () => number): AddressSource {
  return {
    allocate(owner) {
      const got = pool.allocate(owner, now());
      manager.nudge(); // the pool shrank: let the manager top it up in the background
      return got ? { ip: got.ip, eniId: got.eni.eniId, routeTable: got.eni.routeTable } : undefined;
    },
    waitForAddress: (ms) => manager.waitForAddress(ms),
    release(ip) {
      pool.release(ip, now());
      manager.nudge();
    },
    // A failed ADD's address never reached a pod; letting it cool too is merely conservative.
    unreserve(ip) {
      pool.release(ip, now());
    },
  };
}

/**
 * Recovery after a crash: an attachment still in phase 'adding' belongs to an ADD that never
 * answered, so the runtime will retry or DEL it; remove what it may have created (ownership:
 * only its own recorded resources) and forget it.
 */
async function recoverHalfDoneAdds(ledger: Ledger, dataplane: Dataplane, log: Logger): Promise<void> {
  const halfDone = ledger.list().filter((a) => a.phase === 'adding');
  for (const att of halfDone) {
    await dataplane.removeResources(att.resources);
    ledger.remove(att.key);
    log.warn('removed half-done ADD found at start', { key: att.key, ip: att.ip });
  }
  if (halfDone.length > 0) await ledger.commit();
}

function restorePool(pool: AddressPool, ledger: Ledger, log: Logger): void {
  for (const att of ledger.list()) {
    if (!pool.restoreAssigned(att.ip, attachmentKeyString(att.key))) {
      log.error('ledger attachment holds an address the node does not have', { key: att.key, ip: att.ip, eni: att.eniId });
    }
  }
  for (const c of ledger.coolingAddresses()) pool.restoreCooling(c.ip, c.freedAt);
}

/** Convergence at start: host veths with our prefix that no attachment owns are leftovers. */
async function collectOrphanVeths(ledger: Ledger, dataplane: Dataplane, prefix: string, log: Logger): Promise<void> {
  const owned = new Set(ledger.list().map((a) => a.hostVeth));
  const orphans = (await dataplane.listHostVeths(prefix)).filter((name) => !owned.has(name));
  if (orphans.length === 0) return;
  await dataplane.removeResources(orphans.map((hostName) => ({ kind: 'veth', hostName }) as const));
  log.warn('removed host veths no attachment owns', { veths: orphans });
}

async function configureEni(dataplane: Dataplane, eni: EniInfo, mtu: number): Promise<void> {
  if (eni.deviceNumber === 0) return; // the primary ENI is the node's own interface
  await dataplane.setupEni({
    mac: eni.mac,
    deviceNumber: eni.deviceNumber,
    primaryIp: eni.primaryIp,
    subnetCidr: eni.subnetCidr,
    gateway: subnetGateway(eni.subnetCidr),
    routeTable: routeTableFor(eni.deviceNumber),
    mtu,
  });
}

export function introspection(meta: InstanceMetadata, ledger: Ledger, pool: AddressPool, stats: OperationStats, now: () => number) {
  const t = now();
  return {
    pid: process.pid,
    instanceId: meta.instanceId,
    instanceType: meta.instanceType,
    attachments: ledger.list().map((a: Attachment) => ({ ...a, keyString: attachmentKeyString(a.key) })),
    cooling: ledger.coolingAddresses(),
    pool: {
      stats: pool.stats(t),
      enis: pool.enis().map((e) => ({ ...e, addresses: Object.fromEntries(pool.addresses(e.eniId)) })),
    },
    operations: stats.snapshot(),
    memory: { rssBytes: process.memoryUsage().rss },
  };
}

export async function startAgent(deps: AgentDeps): Promise<RunningAgent> {
  const { config, cloud, dataplane, log, now } = deps;
  const ledger = await Ledger.open(new FileLedgerStore(join(config.stateDir, 'ledger.json')), { now });
  const meta = await cloud.metadata();
  const limits = await cloud.instanceTypeLimits(meta.instanceType);
  log.info('instance', { instanceId: meta.instanceId, type: meta.instanceType, limits, vpcCidrs: meta.vpcCidrs });
  await dataplane.setupNode({ vpcCidrs: meta.vpcCidrs, snatSource: meta.primaryIp });

  const pool = new AddressPool({ cooldownMs: deps.targets.cooldownSeconds * 1000 });
  const manager = new PoolManager({
    cloud,
    pool,
    clock: { now },
    log,
    metadata: meta,
    limits,
    targets: deps.targets,
    onEniAttached: (eni: EniInfo) => configureEni(dataplane, eni, config.mtu),
    onCoolingExpired: (ips: readonly string[]) => {
      for (const ip of ips) ledger.removeCooling(ip);
      void ledger.commit().catch((err: unknown) => log.error('ledger commit failed', { error: String(err) }));
    },
    ...(deps.poolIntervalMs !== undefined ? { intervalMs: deps.poolIntervalMs } : {}),
  });
  const enis = await manager.init();
  for (const eni of enis) await configureEni(dataplane, eni, config.mtu);

  await recoverHalfDoneAdds(ledger, dataplane, log);
  restorePool(pool, ledger, log);
  await collectOrphanVeths(ledger, dataplane, config.vethPrefix, log);

  const stats = new OperationStats();
  const ctx: OperationContext = {
    ledger,
    addresses: poolAddressSource(pool, manager, now),
    dataplane,
    pods: deps.pods,
    node: { vpcCidrs: meta.vpcCidrs, primaryIp: meta.primaryIp },
    log,
    now,
    vethPrefix: config.vethPrefix,
    defaultMtu: config.mtu,
    addWaitMs: config.addWaitSeconds * 1000,
    netnsExists: pathExists,
  };
  const serializer = new PodSerializer();
  const handle = (req: Parameters<typeof handleCni>[1]) =>
    handleCni({ ctx, serializer, observe: (c, ok, ms) => stats.record(c, ok, ms) }, req);

  const drained = await drainDelSpool(config.delSpoolDir, handle, log);
  if (drained.replayed + drained.failed > 0) log.info('DEL spool drained', { ...drained });

  manager.start();
  let ready = false;
  const server: Server = await startRpcServer(config.agentSocket, {
    cni: handle,
    ready: () => ready,
    introspect: () => introspection(meta, ledger, pool, stats, now),
  });
  ready = true;
  log.info('serving', { socket: config.agentSocket, attachments: ledger.list().length, pool: pool.stats(now()) });
  return {
    ledger,
    pool,
    async stop() {
      ready = false;
      await stopRpcServer(server);
      await manager.stop();
      await ledger.commit();
    },
  };
}
