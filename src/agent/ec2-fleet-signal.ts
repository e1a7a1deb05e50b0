// The agent's side of the cluster's EC2 throttle Lease (src/pods/lease/ec2-throttle-lease.ts):
// built from the configuration when there is a Kubernetes API and VPCNET_EC2_FLEET_LEASE is not
// off, with EC2's published refill rates and the agent DaemonSet's count. The EC2 budget
// (LimitedCloud) takes it as its FleetThrottleSignal.

import { publishedRefillPerSecond } from '../cloud/ec2-published-limits.ts';
import type { AgentConfig } from '../config/agent-config.ts';
import type { Logger } from '../infra/log.ts';
import { kubeDaemonSetSize } from '../pods/daemonset-size.ts';
import type { KubeApiConfig } from '../pods/kube-api-config.ts';
import { Ec2ThrottleLease, type Ec2ThrottleLeaseDeps } from '../pods/lease/ec2-throttle-lease.ts';
import { kubeLeases } from '../pods/lease/lease.ts';

export interface FleetSignalOptions {
  readonly kubeApi: KubeApiConfig;
  readonly fleet: NonNullable<AgentConfig['ec2Fleet']>;
  readonly nodeName: string;
  readonly log: Logger;
  readonly random?: () => number;
  /** Read intervals and hold, for tests and the fleet bench; the defaults otherwise. */
  readonly timing?: Pick<Ec2ThrottleLeaseDeps, 'readEveryMs' | 'agentsEveryMs' | 'holdMs'>;
}

/**
 * The throttle Lease of this agent, read once (the agent count and the Lease, each bounded by the
 * client's 5 s timeout: an API that does not answer leaves the agent pacing as if alone) before
 * the agent's first EC2 call, then in the background.
 */
export async function startFleetSignal(o: FleetSignalOptions): Promise<Ec2ThrottleLease> {
  const signal = new Ec2ThrottleLease({
    leases: kubeLeases(o.kubeApi, o.fleet.lease),
    identity: o.nodeName,
    now: Date.now,
    random: o.random ?? Math.random,
    agents: kubeDaemonSetSize(o.kubeApi, o.fleet.daemonSet),
    refillPerSecond: publishedRefillPerSecond,
    log: o.log,
    ...o.timing,
  });
  await signal.start();
  return signal;
}
