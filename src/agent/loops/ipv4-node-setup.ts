// What IPv4 mode sets up on the node at start: the SNAT of pod traffic leaving the VPC (none with
// upstream's AWS_VPC_K8S_CNI_EXTERNALSNAT), NodePort support, the rules of AWS_EXTERNAL_SERVICE_CIDRS,
// the SNAT of pods' IPv6 egress (ENABLE_V6_EGRESS), and the loop that re-reads the VPC's CIDR
// blocks so a CIDR added to the VPC stops being SNATed without a restart.
import type { Cloud, InstanceMetadata } from '../../cloud/cloud.ts';
import type { AgentConfig } from '../../config/agent-config.ts';
import type { Dataplane } from '../../dataplane/dataplane.ts';
import { setupExternalServiceRules } from '../../dataplane/external-service-rules.ts';
import { setupNodePort } from '../../dataplane/node-port-setup.ts';
import { setupV6EgressNode } from '../../dataplane/v6-egress-node.ts';
import type { Logger } from '../../infra/log.ts';
import type { PeriodicLoop } from '../../infra/periodic.ts';
import type { AddContext } from '../context.ts';
import { EgressAddresses, V6_EGRESS_RANGE } from '../egress-addresses.ts';
import { type VpcCidrRefreshResult, vpcCidrRefreshLoop } from './vpc-cidr-refresh.ts';

export interface Ipv4NodeSetupDeps {
  readonly config: Pick<AgentConfig, 'externalSnat' | 'snat' | 'nodePort' | 'vethPrefix' | 'podNetwork'>;
  readonly cloud: Cloud;
  readonly meta: InstanceMetadata;
  readonly dataplane: Dataplane;
  readonly log: Logger;
  readonly vpcCidrRefreshed: (result: VpcCidrRefreshResult) => void;
}

export interface Ipv4Node {
  /** The VPC CIDR refresh loop (not started), if one runs. */
  readonly vpcCidrRefresh: PeriodicLoop | undefined;
  /** What ADD's context gains: the pods' IPv6 egress addresses, when the node gives them egress. */
  readonly context: Pick<AddContext, 'v6Egress'>;
}

/** Sets the node up. */
export async function setupIpv4Node(d: Ipv4NodeSetupDeps): Promise<Ipv4Node> {
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
  const v6Egress = await setupV6EgressNode(
    dataplane.kernel,
    { enabled: config.podNetwork.v6Egress, nodeIpv6: meta.primaryIpv6, randomizeSnat: config.snat.randomize },
    d.log,
  );
  const context = v6Egress ? { v6Egress: new EgressAddresses(V6_EGRESS_RANGE) } : {};
  if (config.externalSnat) return { vpcCidrRefresh: undefined, context };
  const vpcCidrRefresh = vpcCidrRefreshLoop(config.snat.vpcCidrRefreshSeconds, {
    read: () => d.cloud.vpcCidrs(meta.primaryMac),
    apply: snatSetup,
    counted: d.vpcCidrRefreshed,
    initial: meta.vpcCidrs,
    log: d.log,
  });
  return { vpcCidrRefresh, context };
}
