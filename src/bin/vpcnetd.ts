// bin/vpcnetd: the node agent. Configuration comes from the environment, parsed once here
// (src/config/settings.ts declares every variable; README, Configuration, lists them).
import { realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { startAgent } from '../agent/agent.ts';
import type { RunningAgent } from '../agent/agent-deps.ts';
import { startFleetSignal } from '../agent/ec2-fleet-signal.ts';
import { ignoredInIpv6Mode } from '../agent/ipv6/ipv6-addressing.ts';
import { CENSUS_LEASE_DURATION_MS } from '../agent/loops/subnet-census.ts';
import { Ec2AttemptFeed } from '../agent/observability/ec2-attempt-feed.ts';
import { stopOnSignal } from '../agent/stop-signal.ts';
import { createAwsCloud } from '../cloud/aws/create-aws-cloud.ts';
import { LimitedCloud } from '../cloud/limited-cloud.ts';
import { allowedCloud } from '../cloud/restricted-cloud.ts';
import { agentConfigFromEnv } from '../config/agent-config.ts';
import { vpcnetdHelp } from '../config/help.ts';
import { unhonouredUpstreamVariables } from '../config/settings.ts';
import { Dataplane } from '../dataplane/dataplane.ts';
import { NetlinkKernel } from '../dataplane/netlink/netlink-kernel.ts';
import { errorText } from '../infra/error-text.ts';
import { jsonLogger } from '../infra/log.ts';
import { VPCNET_VERSION } from '../infra/version.ts';
import { kubeEniConfigs } from '../pods/eni-config.ts';
import { kubeEvents } from '../pods/kube-events.ts';
import { kubeLeases } from '../pods/lease/lease.ts';
import { LeaseElection } from '../pods/lease/lease-election.ts';
import { kubeCniNodes } from '../pods/node/cni-node.ts';
import { kubeNodeConditions, nodeReader } from '../pods/node/node-conditions.ts';
import { kubeNodeLabels } from '../pods/node/node-labels.ts';
import { kubeNodeSchedulability } from '../pods/node/node-schedulable.ts';
import { kubeNodeTaints } from '../pods/node/node-taints.ts';
import { kubePodIpAnnotations } from '../pods/pod-ip-annotation.ts';
import { KubePodCache } from '../pods/watch/pod-cache.ts';
import { kubePodPresence } from '../pods/watch/pod-presence.ts';
import { noPodSource } from '../pods/watch/pod-source.ts';

/** bin/vpcnet-netlink is built beside bin/vpcnetd (scripts/build.mjs). */
function netlinkHelperPath(): string {
  return join(dirname(realpathSync(process.argv[1] ?? '.')), 'vpcnet-netlink');
}

/**
 * The agent takes its settings from the environment alone. An argument is a person at a terminal:
 * --help and --version answer; anything else is refused before anything starts (an agent started
 * by mistake in the caller's namespace would configure it).
 */
function commandLine(args: readonly string[]): number | undefined {
  if (args.length === 0) return undefined;
  if (args.length === 1 && (args[0] === '--help' || args[0] === '-h')) {
    process.stdout.write(vpcnetdHelp());
    return 0;
  }
  if (args.length === 1 && args[0] === '--version') {
    process.stdout.write(`vpcnetd ${VPCNET_VERSION}\n`);
    return 0;
  }
  process.stderr.write(
    `vpcnetd: unknown argument '${args[0]}': the agent takes its settings from the environment and no arguments (vpcnetd --help lists them)\n`,
  );
  return 2;
}

async function main(): Promise<void> {
  const answered = commandLine(process.argv.slice(2));
  if (answered !== undefined) {
    process.exitCode = answered;
    return;
  }
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const config = agentConfigFromEnv(process.env);
  const log = jsonLogger(config.logLevel);
  // The rtnetlink helper starts first, while the agent is small: starting a process forks it.
  const kernel = new NetlinkKernel({ program: netlinkHelperPath(), snat: !config.externalSnat });
  await kernel.start();
  // Handlers first: a signal while the agent starts stops it once started (within the bound).
  let started: Promise<RunningAgent> | undefined;
  let pods: KubePodCache | undefined;
  let limited: LimitedCloud | undefined;
  let fleet: Awaited<ReturnType<typeof startFleetSignal>> | undefined;
  const onSignal = stopOnSignal({
    log,
    exit: (code) => process.exit(code),
    async stop() {
      // A pool pass waiting for an EC2 token (minutes, when EC2 throttles) must not hold the stop.
      limited?.close();
      fleet?.stop();
      const agent = await started;
      await Promise.all([agent?.stop(), pods?.stop()]);
      await kernel.close();
      log.info('stop: netlink helper closed');
    },
  });
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  for (const { variable, reason } of unhonouredUpstreamVariables(process.env))
    log.warn('aws-node setting has no effect in vpcnet', { variable, reason });
  for (const variable of config.ipv6.enabled ? ignoredInIpv6Mode(process.env) : [])
    log.warn('setting has no effect in IPv6 mode (as upstream)', { variable });
  log.info('starting', {
    node: config.nodeName,
    socket: config.agentSocket,
    stateDir: config.stateDir,
    targets: config.targets,
    ec2: config.ec2,
    cloudAccess: config.cloudAccess,
    eniManagement: config.eniManagement,
  });
  // Every EC2 call goes through the agent's own rate limit and retries (LimitedCloud); the EC2
  // client makes one attempt per request so that each retry takes a token.
  const ec2Attempts = new Ec2AttemptFeed(); // the agent's metrics and last EC2 errors listen to it
  const aws = await createAwsCloud({ metadataDisabled: config.cloudAccess.ec2MetadataDisabled });
  // The agents slow down together on the cluster's throttle Lease (VPCNET_EC2_FLEET_LEASE).
  fleet =
    config.kubeApi && config.ec2Fleet
      ? await startFleetSignal({
          kubeApi: config.kubeApi,
          fleet: config.ec2Fleet,
          nodeName: config.nodeName,
          log,
        })
      : undefined;
  limited = new LimitedCloud({
    inner: aws,
    limit: config.ec2,
    log,
    observe: ec2Attempts.emit,
    ...(fleet === undefined ? {} : { fleet }),
  });
  // Locked-down VPCs: no EC2 change (DISABLE_NETWORK_RESOURCE_PROVISIONING), or no EC2 call at all.
  const cloud = allowedCloud(config.cloudAccess, limited, aws.imds);
  // Only pods with security groups need the Kubernetes API (ADD reads their annotation; the
  // node's trunk label): without ENABLE_POD_ENI the client is never even loaded.
  const kube = config.enablePodEni ? config.kubeApi : undefined;
  pods = kube ? new KubePodCache({ api: kube, nodeName: config.nodeName, log }) : undefined;
  await pods?.start();
  // Custom networking reads the node's ENIConfig (config parsing refused it without an API).
  const eniConfigs =
    config.eniPlacement.mode === 'custom' && config.kubeApi
      ? kubeEniConfigs(config.kubeApi, config.nodeName, config.eniPlacement)
      : undefined;
  started = startAgent({
    config,
    targets: config.targets,
    cloud,
    cloudFigures: () => limited?.figures(),
    ec2Budget: limited,
    ec2Attempts,
    dataplane: new Dataplane(kernel),
    pods: pods ?? noPodSource,
    ...(kube ? { nodeLabels: kubeNodeLabels(kube, config.nodeName) } : {}),
    // The dead-pod GC asks the API whenever there is one (its client loads on the first question).
    ...(config.kubeApi ? { podPresence: kubePodPresence(config.kubeApi, config.nodeName) } : {}),
    // AWS_MANAGE_ENIS_NON_SCHEDULABLE=false (the default) asks whether the node is cordoned.
    ...(config.kubeApi
      ? { nodeSchedulability: kubeNodeSchedulability(config.kubeApi, config.nodeName) }
      : {}),
    // The startup taint and Kubernetes Events likewise: both best effort, off without an API; the
    // node's readiness condition (and taint) and its maxPods with them.
    ...(config.kubeApi
      ? {
          nodeTaints: kubeNodeTaints(config.kubeApi, config.nodeName),
          events: kubeEvents(config.kubeApi, config.nodeName, log),
          nodeConditions: kubeNodeConditions(config.kubeApi, config.nodeName),
          readNode: nodeReader(config.kubeApi, config.nodeName),
        }
      : {}),
    ...(eniConfigs === undefined
      ? {}
      : { eniConfigs, nodeEniConfigName: async () => (await eniConfigs.chosen()).name }),
    // The node's CNINode whenever there is an API: with pod ENIs off the agent removes the
    // features it would write with them on (it creates nothing then).
    ...(config.kubeApi ? { cniNodes: kubeCniNodes(config.kubeApi, config.nodeName) } : {}),
    // The subnet census (VPCNET_SUBNET_CENSUS), elected on its Lease; the node name is the identity.
    ...(config.kubeApi && config.capacity.census !== 'off'
      ? {
          censusElection: new LeaseElection({
            leases: kubeLeases(config.kubeApi, config.capacity.censusLease),
            identity: config.nodeName,
            leaseDurationMs: CENSUS_LEASE_DURATION_MS,
            now: Date.now,
            monotonic: () => performance.now(),
          }),
        }
      : {}),
    // ANNOTATE_POD_IP (config parsing refused it without an API).
    ...(config.podNetwork.annotatePodIp && config.kubeApi
      ? { podIpAnnotations: kubePodIpAnnotations(config.kubeApi, log) }
      : {}),
    log,
    now: Date.now,
  });
  await started;
}

main().catch((err: unknown) => {
  process.stderr.write(
    `${JSON.stringify({ time: new Date().toISOString(), level: 'error', msg: 'vpcnetd failed to start', error: errorText(err) })}\n`,
  );
  process.exit(1);
});
