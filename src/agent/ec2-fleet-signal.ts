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
 * The throttle Lease of this agent, reading in the background (its first reads are not awaited:
 * an API server that is slow to answer must not hold the agent's start; until they answer, the
 * agent paces as if alone).
 */
export function startFleetSignal(o: FleetSignalOptions): Ec2ThrottleLease {
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
  void signal.start();
  return signal;
}
