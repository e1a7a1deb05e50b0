// The node agent: rebuilds its state from ledger + kernel + cloud before it serves a request
// (durable before success; convergence), then serves CNI requests on its unix socket.
import { access, mkdir } from 'node:fs/promises';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { settleBinding } from '../bindings/settle.ts';
import type { Cloud, EniInfo, InstanceMetadata } from '../cloud/cloud.ts';
import { parseCniRequest } from '../cni/request.ts';
import type { ForwardedRequest, ForwardedResponse } from '../cni/wire.ts';
import type { AgentConfig } from '../config/agent-config.ts';
import type { Dataplane } from '../dataplane/dataplane.ts';
import { netnsIdentity } from '../dataplane/netns-identity.ts';
import { subnetGateway } from '../infra/ipv4.ts';
import type { Logger } from '../infra/log.ts';
import { PeriodicLoop } from '../infra/periodic.ts';
import { AddressPool, routeTableFor } from '../ipam/pool.ts';
import { type PoolHealth, PoolManager } from '../ipam/pool-manager.ts';
import type { WarmPoolTargets } from '../ipam/targets.ts';
import { Ledger } from '../ledger/ledger.ts';
import { FileLedgerStore } from '../ledger/store.ts';
import { type Attachment, attachmentKeyString } from '../plan/attachment.ts';
import type { EniLinkSpec } from '../plan/eni-plan.ts';
import { PodSerializer } from '../plan/pod-line.ts';
import { vethOf, vpcAddressOf } from '../plan/resource.ts';
import type { NodeLabels } from '../pods/node-labels.ts';
import type { PodSource } from '../pods/pod-source.ts';
import { Reconciler } from '../reconcile/reconciler.ts';
import { handleCni } from './cni-handler.ts';
import type { OperationContext } from './context.ts';
import { startRpcServer, stopRpcServer } from './rpc-server.ts';
import { drainDelSpool } from './spool-drain.ts';
import { AgentCounters, OperationStats } from './stats.ts';
import { TrunkWatcher } from './trunk.ts';

export interface AgentDeps {
  /** The node's labels in the Kubernetes API (absent without an API). */
  readonly nodeLabels?: NodeLabels;
  /** How often the trunk ENI is looked for and checked (ms, default 5 s). */
  readonly trunkIntervalMs?: number;
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
  /** The CNI handler the RPC server serves (also for in-process tests). */
  cni(req: ForwardedRequest): Promise<ForwardedResponse>;
  /** The agent's state as the introspection endpoint serves it. */
  introspect(): ReturnType<typeof introspection>;
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

/**
 * Recovery after a crash: an attachment still in phase 'adding' belongs to an ADD that never
 * answered, so the runtime will retry or DEL it; remove what it may have created (ownership:
 * only its own recorded resources) and forget it. Runs after the pool was rebuilt, which restored
 * its address as assigned: releasing it starts its cooldown (it may have been a rebuild of a pod
 * that used this address).
 */
async function recoverHalfDoneAdds(
  ledger: Ledger,
  dataplane: Dataplane,
  addresses: { release(ip: string, eniId?: string): void },
  log: Logger,
): Promise<void> {
  const halfDone = ledger.list().filter((a) => a.phase === 'adding');
  for (const att of halfDone) {
    await dataplane.remove(att.resources, { netns: att.netns });
    ledger.remove(att.key);
    const address = vpcAddressOf(att.resources);
    if (address) addresses.release(address.ip, address.eniId);
    log.warn('removed half-done ADD found at start', { key: att.key, ip: address?.ip, binding: att.branch });
  }
  if (halfDone.length > 0) await ledger.commit();
  // A half-done ADD of a sandbox on a branch ENI may have taken its binding over: settle it back.
  const bindings = new Set(halfDone.flatMap((a) => (a.branch === undefined ? [] : [a.branch])));
  for (const key of bindings) await settleBinding({ ledger, dataplane, log }, key);
}

function eniLinkSpec(eni: EniInfo, mtu: number): EniLinkSpec {
  return {
    mac: eni.mac,
    deviceNumber: eni.deviceNumber,
    primaryIp: eni.primaryIp,
    subnetCidr: eni.subnetCidr,
    gateway: subnetGateway(eni.subnetCidr),
    routeTable: routeTableFor(eni.deviceNumber),
    mtu,
  };
}

/** The ENI link hooks the pool manager calls (its registry protects their rules from GC meanwhile). */
function eniLinks(dataplane: Dataplane, mtu: number) {
  return {
    async onEniAttached(eni: EniInfo): Promise<void> {
      if (eni.deviceNumber === 0) return; // the primary ENI is the node's own interface
      await dataplane.setupEni(eniLinkSpec(eni, mtu));
    },
    async onEniDetaching(eni: EniInfo): Promise<void> {
      await dataplane.teardownEni(eniLinkSpec(eni, mtu));
    },
  };
}

export function introspection(
  meta: InstanceMetadata,
  ledger: Ledger,
  pool: AddressPool,
  stats: OperationStats,
  counters: AgentCounters,
  now: () => number,
  poolHealth: PoolHealth,
) {
  const t = now();
  return {
    pid: process.pid,
    instanceId: meta.instanceId,
    instanceType: meta.instanceType,
    // What each record owns is in `resources`; its address and host veth are repeated for operators.
    attachments: ledger.list().map((a: Attachment) => ({
      keyString: attachmentKeyString(a.key),
      ...ledger.addressOf(a),
      hostVeth: vethOf(a.resources)?.hostName,
      ...a,
    })),
    cooling: ledger.coolingAddresses(),
    bindings: ledger.bindings(),
    events: counters.snapshot(),
    pool: {
      stats: pool.stats(t),
      ...poolHealth, // growth: why it cannot grow, if it cannot; sync: the comparisons with EC2
      enis: pool.enis().map((e) => ({ ...e, addresses: Object.fromEntries(pool.addresses(e.eniId)) })),
    },
    operations: stats.snapshot(),
    memory: { rssBytes: process.memoryUsage().rss },
  };
}

const SPOOL_DRAIN_INTERVAL_MS = 5000;

/** A drain of the DEL spool that never overlaps itself and never throws (failures are logged). */
function spoolDrainer(
  dir: string,
  ledger: Ledger,
  handle: (req: ForwardedRequest) => Promise<ForwardedResponse>,
  log: Logger,
): () => Promise<void> {
  let running: Promise<void> | undefined;
  // A spooled DEL older than the attachment now holding its key was meant for an earlier one
  // (a reused container ID): DEL does not guess, and must not remove the newer attachment.
  const isStale = (req: ForwardedRequest, spooledAtMs: number): boolean => {
    try {
      const parsed = parseCniRequest(req.env, req.stdin);
      if (parsed.command !== 'DEL') return false;
      const att = ledger.get(parsed.key);
      return att !== undefined && att.createdAt > spooledAtMs;
    } catch {
      return false; // the handler reports what is wrong with it
    }
  };
  return () => {
    running ??= drainDelSpool(dir, { handle, isStale, log })
      .then((r) => {
        if (r.replayed + r.retrying + r.failed + r.stale > 0) log.info('DEL spool drained', { ...r });
      })
      .catch((err: unknown) => log.error('DEL spool drain failed', { dir, error: String(err) }))
      .finally(() => {
        running = undefined;
      });
    return running;
  };
}

export async function startAgent(deps: AgentDeps): Promise<RunningAgent> {
  const { config, cloud, dataplane, log, now } = deps;
  await mkdir(config.stateDir, { recursive: true, mode: 0o700 });
  const ledger = await Ledger.open(new FileLedgerStore(join(config.stateDir, 'ledger.json')), { now });
  const meta = await cloud.metadata();
  const limits = await cloud.instanceTypeLimits(meta.instanceType);
  log.info('instance', {
    instanceId: meta.instanceId,
    type: meta.instanceType,
    limits,
    vpcCidrs: meta.vpcCidrs,
  });
  // With external SNAT (upstream's AWS_VPC_K8S_CNI_EXTERNALSNAT) the node translates nothing.
  if (!config.externalSnat)
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
    ledger,
    ...eniLinks(dataplane, config.mtu),
    ...(deps.poolIntervalMs !== undefined ? { intervalMs: deps.poolIntervalMs } : {}),
    syncIntervalMs: config.ec2SyncSeconds * 1000,
    staleWindowMs: config.ec2StaleSeconds * 1000,
  });
  // Rebuilds the pool from the cloud's view of the ENIs (each link configured before its addresses
  // enter the pool), then the ledger's assignments and cooldowns.
  await manager.init({ configureLinks: true });
  await recoverHalfDoneAdds(ledger, dataplane, manager, log);
  const trunk = config.enablePodEni
    ? new TrunkWatcher({
        manager,
        dataplane,
        labels: deps.nodeLabels,
        log,
        mtu: config.mtu,
        intervalMs: deps.trunkIntervalMs ?? 5000,
      })
    : undefined;
  await trunk?.start();
  const serializer = new PodSerializer();
  const reconciler = new Reconciler({
    ledger,
    dataplane,
    serializer,
    log,
    clock: { now },
    vethPrefix: config.vethPrefix,
    protectedAddresses: () => manager.protectedAddresses(),
    netnsIdentity,
    ...(config.reconcileSeconds > 0
      ? {
          loop: (pass: () => Promise<unknown>) => {
            const intervalMs = config.reconcileSeconds * 1000;
            return new PeriodicLoop({
              run: pass,
              intervalMs,
              firstAfterMs: intervalMs,
              unref: true,
            });
          },
        }
      : {}),
  });

  const stats = new OperationStats();
  const counters = new AgentCounters();
  const ctx: OperationContext = {
    ledger,
    addresses: manager,
    dataplane,
    pods: deps.pods,
    node: { vpcCidrs: meta.vpcCidrs, primaryIp: meta.primaryIp },
    log,
    now,
    vethPrefix: config.vethPrefix,
    defaultMtu: config.mtu,
    addWaitMs: config.addWaitSeconds * 1000,
    externalSnat: config.externalSnat,
    enablePodEni: config.enablePodEni,
    trunk: () => trunk?.current(),
    trunkDriver: config.trunkDriver,
    enforcingMode: config.podSecurityGroupEnforcingMode,
    counters,
    netnsExists: pathExists,
    netnsIdentity,
    notPodNetns: new Set(
      (await Promise.all(['/proc/self/ns/net', '/proc/1/ns/net'].map(netnsIdentity))).filter(
        (id): id is string => id !== undefined,
      ),
    ),
  };
  const handle = (req: ForwardedRequest) =>
    handleCni({ ctx, serializer, observe: (c, ok, ms) => stats.record(c, ok, ms) }, req);

  const introspect = () => introspection(meta, ledger, pool, stats, counters, now, manager.health());
  const drainSpool = spoolDrainer(config.delSpoolDir, ledger, handle, log);
  await drainSpool();
  // Convergence at start, after the spooled DELs (nothing to repair for pods already gone):
  // repair drift and collect leftovers before serving.
  await reconciler.runOnce();

  manager.start();
  reconciler.start();
  let ready = false;
  const server: Server = await startRpcServer(config.agentSocket, {
    cni: handle,
    ready: () => ready,
    introspect: () => introspect(),
  });
  ready = true;
  // DELs spooled while the socket was being replaced, and any the plugin spools later because a
  // connection was refused or reset, are applied without waiting for the next restart.
  await drainSpool();
  const spoolLoop = new PeriodicLoop({
    run: drainSpool,
    intervalMs: SPOOL_DRAIN_INTERVAL_MS,
    firstAfterMs: SPOOL_DRAIN_INTERVAL_MS,
    unref: true,
  });
  spoolLoop.start();
  log.info('serving', {
    socket: config.agentSocket,
    attachments: ledger.list().length,
    pool: pool.stats(now()),
  });
  return {
    ledger,
    pool,
    cni: handle,
    introspect,
    async stop() {
      ready = false;
      await spoolLoop.stop();
      await stopRpcServer(server);
      await reconciler.stop();
      await trunk?.stop();
      await manager.stop();
      await ledger.commit();
    },
  };
}
