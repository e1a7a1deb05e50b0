// What `vpcnetctl state` shows of a running agent: its records, its pool and its counters, for
// operators and tests (the agent's introspection endpoint).
import type { InstanceMetadata } from '../../cloud/cloud.ts';
import type { AddressPool } from '../../ipam/pool/pool.ts';
import type { PoolManager } from '../../ipam/pool/pool-manager.ts';
import type { Ledger } from '../../ledger/ledger.ts';
import { type Attachment, attachmentKeyString } from '../../plan/attachment.ts';
import { vethOf } from '../../plan/resource.ts';
import type { AgentCounters, OperationStats } from '../stats.ts';

export function introspection(
  meta: InstanceMetadata,
  ledger: Ledger,
  pool: AddressPool,
  stats: OperationStats,
  counters: AgentCounters,
  now: () => number,
  manager: Pick<PoolManager, 'eniCleanup' | 'health'>,
) {
  const t = now();
  return {
    pid: process.pid,
    instanceId: meta.instanceId,
    instanceType: meta.instanceType,
    // Where the node is: what a cluster-wide audit matches EC2's ENIs and subnets against.
    vpcId: meta.vpcId,
    subnetId: meta.subnetId,
    availabilityZone: meta.availabilityZone,
    // What each record owns is in `resources`; its address and host veth are repeated for operators.
    attachments: ledger.list().map((a: Attachment) => ({
      keyString: attachmentKeyString(a.key),
      ...ledger.addressOf(a),
      hostVeth: vethOf(a.resources)?.hostName,
      ...a,
    })),
    cooling: ledger.coolingAddresses(),
    bindings: ledger.bindings(),
    events: counters.snapshot(),
    annotationsRejected: counters.rejectedAnnotations(),
    pool: {
      stats: pool.stats(t),
      ...manager.health(), // growth: why it cannot grow, if it cannot; sync: the comparisons with EC2
      enis: pool.enis().map((e) => ({ ...e, addresses: Object.fromEntries(pool.addresses(e.eniId)) })),
      ...manager.eniCleanup(),
    },
    operations: stats.snapshot(),
    memory: { rssBytes: process.memoryUsage().rss },
  };
}
