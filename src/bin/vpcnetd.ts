// bin/vpcnetd: the node agent. Configuration comes from the environment, parsed once here
// (src/config/settings.ts declares every variable; README, Configuration, lists them).
import { realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { startAgent } from '../agent/agent.ts';
import { createAwsCloud } from '../cloud/aws.ts';
import { LimitedCloud } from '../cloud/limited-cloud.ts';
import { agentConfigFromEnv } from '../config/agent-config.ts';
import { vpcnetdHelp } from '../config/help.ts';
import { Dataplane } from '../dataplane/dataplane.ts';
import { NetlinkKernel } from '../dataplane/netlink/netlink-kernel.ts';
import { errorText } from '../infra/error-text.ts';
import { jsonLogger } from '../infra/log.ts';
import { Ec2AttemptFeed } from '../metrics/ec2-attempt-feed.ts';
import { kubeNodeLabels } from '../pods/node-labels.ts';
import { KubePodCache } from '../pods/pod-cache.ts';
import { kubePodPresence } from '../pods/pod-presence.ts';
import { noPodSource } from '../pods/pod-source.ts';

/** bin/vpcnet-netlink is built beside bin/vpcnetd (scripts/build.mjs). */
function netlinkHelperPath(): string {
  return join(dirname(realpathSync(process.argv[1] ?? '.')), 'vpcnet-netlink');
}

async function main(): Promise<void> {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    process.stdout.write(vpcnetdHelp());
    return;
  }
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const config = agentConfigFromEnv(process.env);
  const log = jsonLogger(config.logLevel);
  // The rtnetlink helper starts first, while the agent is small: starting a process forks it.
  const kernel = new NetlinkKernel({ program: netlinkHelperPath(), snat: !config.externalSnat });
  await kernel.start();
  log.info('starting', {
    node: config.nodeName,
    socket: config.agentSocket,
    stateDir: config.stateDir,
    targets: config.targets,
    ec2: config.ec2,
  });
  // Every EC2 call goes through the agent's own rate limit and retries (LimitedCloud); the EC2
  // client makes one attempt per request so that each retry takes a token.
  const ec2Attempts = new Ec2AttemptFeed(); // the agent's metrics and last EC2 errors listen to it
  const cloud = new LimitedCloud({
    inner: await createAwsCloud(),
    limit: config.ec2,
    log,
    observe: ec2Attempts.emit,
  });
  // Only pods with security groups need the Kubernetes API (ADD reads their annotation; the
  // node's trunk label): without ENABLE_POD_ENI the client is never even loaded.
  const kube = config.enablePodEni ? config.kubeApi : undefined;
  const pods = kube ? new KubePodCache({ api: kube, nodeName: config.nodeName, log }) : undefined;
  await pods?.start();
  const agent = await startAgent({
    config,
    targets: config.targets,
    cloud,
    cloudFigures: () => cloud.figures(),
    ec2Attempts,
    dataplane: new Dataplane(kernel),
    pods: pods ?? noPodSource,
    ...(kube ? { nodeLabels: kubeNodeLabels(kube, config.nodeName) } : {}),
    // The dead-pod GC asks the API whenever there is one (its client loads on the first question).
    ...(config.kubeApi ? { podPresence: kubePodPresence(config.kubeApi, config.nodeName) } : {}),
    log,
    now: Date.now,
  });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('stopping', { signal });
    Promise.all([agent.stop(), pods?.stop()])
      .then(() => kernel.close())
      .then(
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
    `${JSON.stringify({ time: new Date().toISOString(), level: 'error', msg: 'vpcnetd failed to start', error: errorText(err) })}\n`,
  );
  process.exit(1);
});
