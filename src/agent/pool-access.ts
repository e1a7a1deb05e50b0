// How the pool manager may use the cloud, from the agent's configuration: whether it provisions at
// all (DISABLE_NETWORK_RESOURCE_PROVISIONING, ENABLE_IMDS_ONLY_MODE), whether an address waits for a
// second read before it is lent (IMDS-only: the reads are of instance metadata, every
// VPCNET_IMDS_STALE_SECONDS), which ENIs it uses (MANAGE_UNTAGGED_ENI), and whether a cordoned node
// holds it back (AWS_MANAGE_ENIS_NON_SCHEDULABLE).
import type { AgentConfig } from '../config/agent-config.ts';
import type { PoolManagerDeps } from '../ipam/pool/pool-manager.ts';
import type { NodeSchedulability } from '../pods/node/node-schedulable.ts';

type PoolAccess = Pick<
  PoolManagerDeps,
  | 'provisioning'
  | 'lendOnlyConfirmed'
  | 'manageUntaggedEnis'
  | 'nodeUnschedulable'
  | 'syncIntervalMs'
  | 'staleWindowMs'
>;

export function poolAccess(config: AgentConfig, node: NodeSchedulability | undefined): PoolAccess {
  const { cloudAccess, eniManagement } = config;
  const syncMs = (cloudAccess.imdsOnly ? cloudAccess.imdsStaleSeconds : config.ec2SyncSeconds) * 1000;
  const staleMs = (cloudAccess.imdsOnly ? cloudAccess.imdsStaleSeconds : config.ec2StaleSeconds) * 1000;
  return {
    provisioning: cloudAccess.provisioning,
    lendOnlyConfirmed: cloudAccess.imdsOnly,
    manageUntaggedEnis: eniManagement.manageUntagged,
    ...(eniManagement.onUnschedulableNode || node === undefined
      ? {}
      : { nodeUnschedulable: () => node.unschedulable() }),
    syncIntervalMs: syncMs,
    staleWindowMs: staleMs,
  };
}
