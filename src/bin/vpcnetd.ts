// bin/vpcnetd: the node agent. Configuration comes from the environment (README, Configuration).
import { startAgent } from '../agent/agent.ts';
import { agentConfigFromEnv } from '../agent/config.ts';
import { jsonLogger } from '../agent/log.ts';
import { createAwsCloud } from '../cloud/aws.ts';
import { LinuxDataplane } from '../dataplane/linux.ts';
import { parseWarmPoolTargets } from '../ipam/targets.ts';
import { KubePodSource, noPodSource } from '../pods/pod-source.ts';

const HELP = `Usage: vpcnetd

The vpcnet node agent. Serves the CNI plugin on a unix socket and keeps the node's pool of
VPC addresses. Configured by environment variables (see README, "Configuration"):
VPCNET_AGENT_SOCKET, VPCNET_STATE_DIR, VPCNET_DEL_SPOOL_DIR, VPCNET_NODE_NAME, VPCNET_KUBE_API,
VPCNET_MTU, VPCNET_VETH_PREFIX, VPCNET_LOG_LEVEL, VPCNET_RECONCILE_SECONDS (seconds between
reconcile passes: drift repair and GC; default 30, 0 = off), WARM_ENI_TARGET, WARM_IP_TARGET,
MINIMUM_IP_TARGET, MAX_ENI, IP_COOLDOWN_PERIOD, ENABLE_POD_ENI, AWS_ENDPOINT_URL_EC2,
AWS_EC2_METADATA_SERVICE_ENDPOINT, AWS_REGION.
`;

async function main(): Promise<void> {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    process.stdout.write(HELP);
    return;
  }
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const config = agentConfigFromEnv(process.env);
  const targets = parseWarmPoolTargets(process.env);
  const log = jsonLogger(config.logLevel);
  log.info('starting', {
    node: config.nodeName,
    socket: config.agentSocket,
    stateDir: config.stateDir,
    targets,
  });
  const cloud = await createAwsCloud();
  const agent = await startAgent({
    config,
    targets,
    cloud,
    dataplane: new LinuxDataplane(),
    pods: config.kubeApi ? new KubePodSource(config.kubeApi) : noPodSource,
    log,
    now: Date.now,
  });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('stopping', { signal });
    agent.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error('stop failed', { error: String(err) });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(
    `${JSON.stringify({ time: new Date().toISOString(), level: 'error', msg: 'vpcnetd failed to start', error: err instanceof Error ? err.message : String(err) })}\n`,
  );
  process.exit(1);
});
