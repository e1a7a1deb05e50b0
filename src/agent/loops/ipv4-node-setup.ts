// What IPv4 mode sets up on the node at start: the SNAT of pod traffic leaving the VPC (none with
// upstream's AWS_VPC_K8S_CNI_EXTERNALSNAT), NodePort support, the rules of AWS_EXTERNAL_SERVICE_CIDRS,
// and the loop that re-reads the VPC's CIDR blocks so a CIDR added to the VPC stops being SNATed
// without a restart.
import type { Cloud, InstanceMetadata } from '../../cloud/cloud.ts';
import type { AgentConfig } from '../../config/agent-config.ts';
import type { Dataplane } from '../../dataplane/dataplane.ts';
import { setupExternalServiceRules } from '../../dataplane/external-service-rules.ts';
import { setupNodePort } from '../../dataplane/node-port-setup.ts';
import type { Logger } from '../../infra/log.ts';
import type { PeriodicLoop } from '../../infra/periodic.ts';
import { type VpcCidrRefreshResult, vpcCidrRefreshLoop } from './vpc-cidr-refresh.ts';

export interface Ipv4NodeSetupDeps {
  readonly config: Pick<AgentConfig, 'externalSnat' | 'snat' | 'nodePort' | 'vethPrefix' | 'podNetwork'>;
  readonly cloud: Cloud;
  readonly meta: InstanceMetadata;
  readonly dataplane: Dataplane;
  readonly log: Logger;
  readonly vpcCidrRefreshed: (result: VpcCidrRefreshResult) => void;
}

/** Sets the node up; returns the VPC CIDR refresh loop (not started), if one runs. */
export async function setupIpv4Node(d: Ipv4NodeSetupDeps): Promise<PeriodicLoop | undefined> {
  const { config, meta, dataplane } = d;
  const snatSetup = (vpcCidrs: readonly string[]) =>
    dataplane.setupNode({
      vpcCidrs,
      snatSource: meta.primaryIp,
      excludeCidrs: config.snat.excludeCidrs,
      randomizeSnat: config.snat.randomize,
    });
  if (!config.externalSnat) await snatSetup(meta.vpcCidrs);
  await setupNodePort(
    { ...config.nodePort, primaryMac: meta.primaryMac, vethPrefix: config.vethPrefix },
    { dataplane, log: d.log },
  );
  // Asked for by name, and a rule add fails only for a real fault: the start fails, saying which.
  const external = config.podNetwork.externalServiceCidrs;
  await setupExternalServiceRules(dataplane.kernel, external);
  if (external.length > 0)
    d.log.info('external service CIDRs reached through the main table', { cidrs: external });
  if (config.externalSnat) return undefined;
  return vpcCidrRefreshLoop(config.snat.vpcCidrRefreshSeconds, {
    read: () => d.cloud.vpcCidrs(meta.primaryMac),
    apply: snatSetup,
    counted: d.vpcCidrRefreshed,
    initial: meta.vpcCidrs,
    log: d.log,
  });
}
