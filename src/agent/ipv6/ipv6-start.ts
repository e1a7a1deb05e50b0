// What IPv6 mode (ENABLE_IPv6) adds to the agent's start: the node checked and set up for IPv6 pods
// (forwarding on, or the start is refused; the IPv4 egress SNAT as ENABLE_V4_EGRESS says), and the
// node-local IPv4 egress addresses for the operations' context.
import type { AgentConfig } from '../../config/agent-config.ts';
import type { Dataplane } from '../../dataplane/dataplane.ts';
import type { OperationContext } from '../context.ts';
import { EgressAddresses, V4_EGRESS_RANGE } from '../egress-addresses.ts';

export async function startIpv6(
  config: Pick<AgentConfig, 'ipv6' | 'snat'>,
  dataplane: Dataplane,
  primaryIp: string,
): Promise<Pick<OperationContext, 'v4Egress'>> {
  const egress = config.ipv6.v4Egress;
  await dataplane.setupIpv6Node({
    v4Egress: egress ? { snatSource: primaryIp, randomizeSnat: config.snat.randomize } : undefined,
  });
  return egress ? { v4Egress: new EgressAddresses(V4_EGRESS_RANGE) } : {};
}
