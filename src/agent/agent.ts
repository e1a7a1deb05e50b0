// The node agent. Its start reads as four steps: open its state (the ledger), rebuild from the cloud
// (the instance, the addressing mode chosen once, its addresses), recover what a lost ledger or a
// crash left (durable before success; convergence), then serve CNI requests on its unix socket.

import { mkdir } from 'node:fs/promises';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ForwardedRequest } from '../cni/wire.ts';
import { netnsIdentity } from '../dataplane/netns-identity.ts';
import { errorText } from '../infra/error-text.ts';
import { KeyedSerializer } from '../infra/keyed-serializer.ts';
import { PeriodicLoop } from '../infra/periodic.ts';
import { eniPlacerFor } from '../ipam/enis/eni-placer-for.ts';
import { addressablePods } from '../ipam/pool/max-pods.ts';
import { AddressPool } from '../ipam/pool/pool.ts';
import { PoolManager } from '../ipam/pool/pool-manager.ts';
import { effectiveMaxEnis, secondaryIpsPerEni } from '../ipam/pool/targets.ts';
import type { Ledger } from '../ledger/ledger.ts';
import { nodeLedgerFsWithSyncThread } from '../ledger/storage/node-fs.ts';
import { FileLedgerStore } from '../ledger/storage/store.ts';
import { SyncThread } from '../ledger/storage/sync-thread.ts';
import { reportedMaxPods } from '../pods/node/node-conditions.ts';
import { noPodSource } from '../pods/watch/pod-source.ts';
import { Reconciler } from '../reconcile/reconciler.ts';
import { type Addressing, startAddressing } from './addressing.ts';
import { adoptOnStart, refuseBesideAwsNode } from './adoption/adoption-start.ts';
import type { AgentDeps, RunningAgent } from './agent-deps.ts';
import { TrunkFacts } from './branch/trunk-facts.ts';
import { handleCni } from './cni-ops/cni-handler.ts';
import { inspectNetns } from './cni-ops/netns-inspection.ts';
import { notANetworkNamespace } from './cni-ops/pod-netns.ts';
import { RequestGate, refusedWhileStopping } from './cni-ops/request-gate.ts';
import { startRpcServer } from './cni-ops/rpc-server.ts';
import type { OperationContext } from './context.ts';
import { stopGracefully } from './graceful-stop.ts';
import { explainPod } from './introspection/explain.ts';
import { introspection } from './introspection/introspection.ts';
import { RecentErrors } from './introspection/recent-errors.ts';
import { CniNodeKeeper } from './loops/cni-node.ts';
import { agentDeadPodGc } from './loops/dead-pod-gc.ts';
import { eniLinks } from './loops/eni-links.ts';
import { NodeReadiness, warmTargetWorth, warnIfMaxPodsTooHigh } from './loops/node-readiness.ts';
import { startStartupTaint } from './loops/startup-taint.ts';
import { SubnetCensusLoop } from './loops/subnet-census.ts';
import { TrunkWatcher } from './loops/trunk.ts';
import { AgentObservability } from './observability/agent-observability.ts';
import { poolAccess } from './pool-access.ts';
import { recoverHalfDoneAdds } from './recovery/half-done-adds.ts';
import { sweepRecovered } from './recovery/recovered-release.ts';
import {
  type LedgerLoss,
  openLedger,
  type RecoveryStart,
  recoverFromNode,
  recoveryView,
} from './recovery/recovery.ts';
import { type SpoolGuard, spoolDrainer } from './spool-replay/spool-drain.ts';
import { AgentCounters, OperationStats } from './stats.ts';
import { untilNotThrottled } from './throttled-start.ts';

const SPOOL_DRAIN_INTERVAL_MS = 5000;

export async function startAgent(deps: AgentDeps): Promise<RunningAgent> {
  await refuseBesideAwsNode(deps.config);
  const observed = new AgentObservability(deps.now, deps.ec2Attempts);
  // The node's pods wait for the agent's start: its EC2 calls go as demand (ec2-budget.ts).
  deps.ec2Budget?.starting?.();
  // The node's initialisation, timed as upstream times its own (awscni_ipamd_node_initialization_duration_seconds).
  const { state, node, recovered } = await observed.metrics.start.nodeInitialization(
    hasKubernetesApi(deps),
    async () => {
      const state = await openState(deps, observed);
      const node = await rebuildFromCloud(deps, state);
      return { state, node, recovered: await recover(deps, state, node) };
    },
  );
  // Started: from now on the agent's EC2 calls go by their class (its start went as demand).
  deps.ec2Budget?.started?.();
  return serve(deps, state, node, recovered);
}

/** Whether the agent has a Kubernetes API to talk to (upstream's with_api_server). */
function hasKubernetesApi(deps: AgentDeps): boolean {
  return (
    deps.pods !== noPodSource ||
    deps.podPresence !== undefined ||
    deps.nodeTaints !== undefined ||
    deps.nodeLabels !== undefined
  );
}

interface OpenState {
  readonly observed: AgentObservability;
  readonly ledger: Ledger;
  readonly loss: LedgerLoss | undefined;
}

/** The ledger, opened (a refused one set aside), with the agent's metrics around its store. */
async function openState(deps: AgentDeps, observed: AgentObservability): Promise<OpenState> {
  const { config, log, now } = deps;
  await mkdir(config.stateDir, { recursive: true, mode: 0o700 });
  const syncs = new SyncThread(undefined, undefined, {
    synced: observed.metrics.ledgerSync,
    slow: (ms, poolForMs) =>
      log.warn('ledger: an fdatasync on the event loop was slow; the next ones go through the thread pool', {
        ms: Math.round(ms),
        poolForMs,
      }),
  });
  const store = observed.ledgerStore(
    new FileLedgerStore(join(config.stateDir, 'ledger.json'), nodeLedgerFsWithSyncThread(syncs)),
  );
  const { ledger, loss } = await openLedger(store, { now }, log);
  return { observed, ledger, loss };
}

type NodeState = Awaited<ReturnType<typeof rebuildFromCloud>>;

/**
 * The instance as EC2 and IMDS describe it, the pool of ENI addresses and its manager, and the
 * addressing mode (chosen once), its addresses rebuilt from the cloud.
 */
async function rebuildFromCloud(deps: AgentDeps, { observed, ledger }: OpenState) {
  const { config, cloud, dataplane, log, now } = deps;
  const meta = await cloud.metadata();
  const throttled = { log, sleep: (ms: number) => sleep(ms), random: Math.random };
  const limits = await untilNotThrottled(
    'describe the instance type',
    () => cloud.instanceTypeLimits(meta.instanceType),
    throttled,
  );
  log.info('instance', {
    instanceId: meta.instanceId,
    type: meta.instanceType,
    limits,
    vpcCidrs: meta.vpcCidrs,
  });
  const pool = new AddressPool({ cooldownMs: deps.targets.cooldownSeconds * 1000 });
  const census = subnetCensusOf(deps);
  const manager = new PoolManager({
    cloud,
    pool,
    clock: { now },
    log,
    metadata: meta,
    limits,
    targets: deps.targets,
    prefixMode: config.prefixMode,
    ledger,
    eniTags: config.eniTags,
    eniPlacement: eniPlacerFor(
      // IMDS-only mode reads no subnet (no EC2 call) and never places an ENI: nothing drains.
      config.cloudAccess.imdsOnly && config.eniPlacement.mode === 'discovery'
        ? 'primary'
        : config.eniPlacement.mode,
      cloud,
      meta,
      deps.eniConfigs,
      config.eniTags.clusterName,
      census === undefined ? undefined : { census, byPrefixes: config.prefixMode.enabled },
    ),
    ...(census === undefined ? {} : { census }),
    minEniLifetimeMs: config.minEniLifetimeMs,
    leakedEniCleanup: config.leakedEniCleanup,
    ...eniLinks(dataplane, config.podNetwork.mtu.eni),
    ...(deps.poolIntervalMs !== undefined ? { intervalMs: deps.poolIntervalMs } : {}),
    maxBackoffMs: config.capacity.poolRetryMaxSeconds * 1000,
    syncIntervalMs: config.ec2SyncSeconds * 1000,
    subnetTagsIntervalMs: config.subnetTagsSeconds * 1000,
    staleWindowMs: config.ec2StaleSeconds * 1000,
    observer: observed.metrics.poolObserver(),
    ...poolAccess(config, deps.nodeSchedulability),
    ...(deps.ec2Budget === undefined ? {} : { ec2Budget: deps.ec2Budget }),
  });
  const addressing: Addressing = await startAddressing({
    config,
    cloud,
    meta,
    ledger,
    targets: deps.targets,
    dataplane,
    log,
    now,
    registry: observed.metrics.registry,
    vpcCidrRefreshed: observed.metrics.vpcCidrRefreshed,
    pool,
    manager,
  });
  await addressing.rebuildFromCloud((describe) =>
    untilNotThrottled("describe the node's ENIs", describe, throttled),
  );
  // EC2's view of the trunk's branch ENIs: what a pod-eni annotation (and recovery) is checked against.
  const trunkFacts = config.enablePodEni
    ? new TrunkFacts({ cloud, now: () => performance.now(), sleep: (ms) => sleep(ms) })
    : undefined;
  return { meta, limits, pool, manager, addressing, trunkFacts, census };
}

/**
 * What the node says of its capacity (VPCNET_NODE_READINESS): the condition, the taint in taint
 * mode, and once a warning when kubelet's maxPods is above what the node can address. Started;
 * none without an API or with readiness off.
 */
function startNodeReadiness(deps: AgentDeps, n: NodeState): NodeReadiness | undefined {
  const { config, log, now } = deps;
  const { pool, manager, limits, addressing } = n;
  const mode = config.capacity.readiness;
  if (mode === 'off' || deps.nodeConditions === undefined) return undefined;
  const prefixMode = config.prefixMode.enabled;
  const warmWorth = warmTargetWorth({
    ...deps.targets,
    warmPrefixTarget: config.prefixMode.warmPrefixTarget,
    prefixMode,
    secondaryIpsPerEni: secondaryIpsPerEni(limits),
  });
  const readiness = new NodeReadiness({
    mode,
    conditions: deps.nodeConditions,
    ...(mode === 'taint' && deps.nodeTaints !== undefined ? { taints: deps.nodeTaints } : {}),
    pool: () => ({
      free: config.ipv6.enabled ? (addressing.hasFreeAddress() ? 1 : 0) : pool.stats(now()).available,
      blocked: manager.health().growth.blocked,
      roomToGrow: manager.roomToGrow(),
      warmWorth,
    }),
    log,
    now,
    events: deps.events,
    nodeName: config.nodeName,
  });
  readiness.start();
  if (deps.readNode !== undefined) {
    const customNetworking = config.eniPlacement.mode === 'custom';
    void warnIfMaxPodsTooHigh({
      readNode: deps.readNode,
      maxPodsOf: reportedMaxPods,
      addressable: addressablePods(
        { ...limits, maxEnis: effectiveMaxEnis(limits, deps.targets) },
        { prefixDelegation: prefixMode, customNetworking },
      ),
      mode: prefixMode ? 'prefix mode' : 'secondary-IP mode',
      nodeName: config.nodeName,
      events: deps.events,
      log,
    });
  }
  return readiness;
}

/** The census loop the settings ask for (VPCNET_SUBNET_CENSUS), not started; none without an election. */
function subnetCensusOf(deps: AgentDeps): SubnetCensusLoop | undefined {
  const mode = deps.config.capacity.census;
  if (mode === 'off' || deps.censusElection === undefined) return undefined;
  return new SubnetCensusLoop({
    election: deps.censusElection,
    cloud: deps.cloud,
    log: deps.log,
    now: deps.now,
    places: mode === 'place',
    timing: { periodMs: deps.config.capacity.censusPeriodSeconds * 1000 },
  });
}

/**
 * Before anything is collected or lent: on a start without a ledger, aws-node's pods adopted (when
 * it ran here) and what else the node holds (recovery); ADDs a crash left half done (undone), and
 * the trunk found and configured.
 */
async function recover(deps: AgentDeps, { ledger, loss, observed }: OpenState, n: NodeState) {
  const { config, dataplane, log } = deps;
  const { manager, addressing, trunkFacts } = n;
  const adoption = await adoptOnStart(
    { ...deps, ledger, pool: n.pool, family: addressing.family, ...netnsDirOf(deps) },
    loss,
  );
  const recovery: RecoveryStart | undefined =
    loss &&
    (await recoverFromNode(
      {
        ...deps,
        ledger,
        addresses: addressing.recovery,
        vethPrefix: config.vethPrefix,
        ...(config.adoptAwsNode === undefined ? {} : { awsVethPrefix: config.adoptAwsNode.vethPrefix }),
        protectedAddresses: manager.protectedAddresses(),
        ...(trunkFacts === undefined
          ? {}
          : {
              branches: {
                trunkEniId: manager.trunkEni()?.eniId,
                trunkFacts,
                defaultMode: config.podSecurityGroupEnforcingMode,
              },
            }),
      },
      loss,
    ));
  await recoverHalfDoneAdds(ledger, dataplane, addressing.addresses, log);
  // The controller learns what the node wants (a trunk ENI, custom networking) from its CNINode.
  const cniNode =
    deps.cniNodes &&
    new CniNodeKeeper({
      cniNodes: deps.cniNodes,
      podEni: config.enablePodEni,
      ...(deps.nodeEniConfigName === undefined ? {} : { eniConfigName: deps.nodeEniConfigName }),
      log,
      intervalMs: deps.cniNodeIntervalMs ?? 60_000,
    });
  cniNode?.start();
  const trunk = config.enablePodEni
    ? new TrunkWatcher({
        manager,
        dataplane,
        labels: deps.nodeLabels,
        log,
        mtu: config.podNetwork.mtu.eni,
        intervalMs: deps.trunkIntervalMs ?? 5000,
        failed: observed.metrics.trunkCheckFailed,
        // Under custom networking the trunk is asked for once the CNINode names the ENIConfig.
        ...(cniNode !== undefined && deps.nodeEniConfigName !== undefined
          ? { mayAskForTrunk: () => cniNode.told }
          : {}),
      })
    : undefined;
  await trunk?.start();
  return { adoption, recovery, trunk, cniNode };
}

function netnsDirOf(deps: AgentDeps): { netnsDir?: string } {
  return deps.runtimeNetnsDir === undefined ? {} : { netnsDir: deps.runtimeNetnsDir };
}

/** The operations' context, the reconcile loop and the RPC server: the agent serves from here on. */
async function serve(
  deps: AgentDeps,
  { observed, ledger }: OpenState,
  n: NodeState,
  { adoption, recovery, trunk, cniNode }: Awaited<ReturnType<typeof recover>>,
): Promise<RunningAgent> {
  const { config, cloud, dataplane, log, now } = deps;
  const { meta, limits, pool, manager, addressing, trunkFacts, census } = n;
  const serializer = new KeyedSerializer();
  const reconciler = new Reconciler({
    ledger,
    dataplane,
    serializer,
    log,
    clock: { now },
    vethPrefix: config.vethPrefix,
    protectedAddresses: () => manager.protectedAddresses(),
    netnsIdentity,
    onPass: observed.metrics.reconciled,
    sweepRecovered: (node) =>
      sweepRecovered({ ledger, dataplane, addresses: addressing.addresses, log, pods: deps.pods }, node),
    ...(config.reconcileSeconds > 0
      ? {
          loop: (pass: () => Promise<unknown>) => {
            const intervalMs = config.reconcileSeconds * 1000;
            return new PeriodicLoop({ run: pass, intervalMs, firstAfterMs: intervalMs, unref: true });
          },
        }
      : {}),
  });

  const stats = new OperationStats();
  const counters = new AgentCounters();
  // Started once the agent serves (below); an ADD that empties the pool makes it look at once.
  let readiness: NodeReadiness | undefined;
  const ctx: OperationContext = {
    ledger,
    addresses: observed.addresses(addressing.addresses, () => {
      if (readiness !== undefined && !addressing.hasFreeAddress()) readiness.nudge();
    }),
    dataplane,
    pods: deps.pods,
    node: { vpcCidrs: meta.vpcCidrs, primaryIp: meta.primaryIp },
    log,
    now,
    vethPrefix: config.vethPrefix,
    defaultMtu: config.podNetwork.mtu.pod,
    addWaitMs: config.addWaitSeconds * 1000,
    externalSnat: config.externalSnat,
    enablePodEni: config.enablePodEni,
    trunk: () => trunk?.current(),
    ...(trunkFacts === undefined ? {} : { trunkFacts }),
    trunkDriver: config.trunkDriver,
    enforcingMode: config.podSecurityGroupEnforcingMode,
    counters,
    ...addressing.context,
    ...(deps.events === undefined ? {} : { events: deps.events }),
    netnsIdentity,
    inspectNetns: (path: string) => inspectNetns(path, deps.notANetworkNamespace ?? notANetworkNamespace),
    notPodNetns: new Set(
      (await Promise.all(['/proc/self/ns/net', '/proc/1/ns/net'].map(netnsIdentity))).filter(
        (id): id is string => id !== undefined,
      ),
    ),
  };
  const cniDeps = {
    ctx,
    serializer,
    observe: (c: string, ok: boolean, ms: number) => {
      stats.record(c, ok, ms);
      observed.metrics.operation(c, ok, ms);
    },
    spool: { dir: config.delSpoolDir, log },
    ...(deps.podIpAnnotations === undefined ? {} : { podIps: deps.podIpAnnotations }),
  };
  // Failed operations, for status and explain: every answer, the spool drain's included.
  const recentErrors = new RecentErrors(now);
  const handle = recentErrors.watching((req, guard?: SpoolGuard) => handleCni(cniDeps, req, guard));
  // Graceful stop: requests let in before the stop began are finished and answered.
  const gate = new RequestGate();
  const cni = (req: ForwardedRequest) =>
    gate.run(() => handle(req)) ?? Promise.resolve(refusedWhileStopping(req));

  const monotonicNow = deps.monotonicNow ?? (() => performance.now());
  const deadPodGc = agentDeadPodGc(config.deadPodGc, deps.podPresence, { ctx, serializer, monotonicNow });
  const drainSpool = spoolDrainer(config.delSpoolDir, handle, log);
  const introspect = () => ({
    ...addressing.withPoolView(introspection(meta, ledger, pool, stats, counters, now, manager)),
    // CLUSTER_NAME: which cluster-tagged ENIs the audit counts as this cluster's.
    ...(config.eniTags.clusterName === undefined ? {} : { clusterName: config.eniTags.clusterName }),
    deadPodGc: deadPodGc?.state() ?? 'off',
    // Pods with their own security groups: the trunk ENI their branch ENIs hang off (null until found).
    ...(trunk === undefined ? {} : { trunk: trunk.current() ?? null }),
    recovery: recoveryView(ledger, recovery, now()),
    ...(adoption === undefined ? {} : { adoption }),
    ...(deps.cloudFigures === undefined ? {} : { ec2: deps.cloudFigures() }),
    cloudErrors: observed.cloudErrors(),
    recentErrors: recentErrors.list(),
    ...(deps.events === undefined ? {} : { kubeEvents: deps.events.figures() }),
    ...(deps.podIpAnnotations === undefined ? {} : { podIpAnnotations: deps.podIpAnnotations.figures() }),
    ...(census === undefined ? {} : { census: census.state() }),
    ...(readiness?.state() === undefined ? {} : { readiness: readiness.state() }),
  });
  await drainSpool();
  // Convergence at start, after the spooled DELs (nothing to repair for pods already gone):
  // repair drift and collect leftovers before serving.
  await reconciler.runOnce({ startUp: true });

  // A compaction the ledger has due (none written yet on a fresh node, or a journal past its
  // bound) is written now, not by the first ADD; a failure is the first commit's to report.
  await ledger.prepare().catch((err: unknown) =>
    log.warn('cannot compact the ledger before serving; the next commit tries again', {
      error: errorText(err),
    }),
  );
  const state = {
    readiness: { state: () => readiness?.state() },
    now,
    pool,
    manager,
    limits,
    counters,
    ledger,
    deadPodGc,
    targets: deps.targets,
    ...(census === undefined ? {} : { census }),
  };
  const endpoints = await observed.serve(config, introspect, state);
  addressing.start();
  reconciler.start();
  census?.start();
  let ready = false;
  const server: Server = await startRpcServer(config.agentSocket, {
    cni,
    ready: () => ready,
    introspect,
    explain: (ns, pod) => explainPod({ ledger, dataplane, cloud, meta, manager, recentErrors }, ns, pod),
    accepting: () => gate.open,
  });
  ready = true;
  observed.metrics.start.served(hasKubernetesApi(deps));
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
  deadPodGc?.start();
  // Serving now: the node may take pods once the pool has an address too.
  const taint = startStartupTaint(deps.nodeTaints, {
    key: config.startupTaint,
    nodeName: config.nodeName,
    hasFreeAddress: () => addressing.hasFreeAddress(),
    events: deps.events,
    log,
  });
  readiness = startNodeReadiness(deps, n);
  log.info('serving', {
    socket: config.agentSocket,
    attachments: ledger.list().length,
    pool: pool.stats(now()),
  });
  return {
    ledger,
    pool,
    cni,
    deadPodGc,
    introspect,
    endpoints,
    async stop() {
      ready = false;
      await observed.close();
      const loops = [
        spoolLoop,
        ...addressing.loops,
        deadPodGc,
        reconciler,
        trunk,
        cniNode,
        manager,
        census,
        readiness,
        taint,
        deps.events,
        deps.podIpAnnotations,
      ];
      const stopLoops = () => Promise.all(loops.map((l) => l?.stop()));
      await stopGracefully({ gate, server, stopLoops, ledger, log });
      await ledger.close();
    },
  };
}
