// Where adoption meets the agent's start (agent.ts): the refusal to run beside aws-node, and the
// adoption itself on a start without a ledger, in IPv4 mode, when aws-node's checkpoint is there.

import { VPCNET_NETWORK_NAME } from '../../cni/identifiers.ts';
import type { AgentConfig } from '../../config/agent-config.ts';
import type { Dataplane } from '../../dataplane/dataplane.ts';
import { netnsIdentity } from '../../dataplane/netns-identity.ts';
import { errorText } from '../../infra/error-text.ts';
import type { Logger } from '../../infra/log.ts';
import { pathExists } from '../../infra/path-exists.ts';
import type { AddressPool } from '../../ipam/pool/pool.ts';
import type { Ledger } from '../../ledger/ledger.ts';
import { MAIN_TABLE } from '../../plan/views.ts';
import type { PodSource } from '../../pods/watch/pod-source.ts';
import type { LedgerLoss } from '../recovery/recovery.ts';
import { type AdoptionPool, type AdoptionReport, adoptAwsNodePods } from './adopt.ts';
import { readAwsNodeCheckpoint } from './aws-node-checkpoint.ts';
import { IPAMD_PORT, ipamdListening } from './ipamd-listening.ts';

/** Where runtimes bind pods' network namespaces (containerd, CRI-O, `ip netns`). */
export const RUNTIME_NETNS_DIR = '/var/run/netns';

/**
 * Refuses to start on a node where aws-node's ipamd still runs (its checkpoint is there and it
 * listens): two agents would manage the same ENIs and addresses.
 */
export async function refuseBesideAwsNode(
  config: Pick<AgentConfig, 'adoptAwsNode'>,
  listening: () => Promise<boolean> = ipamdListening,
): Promise<void> {
  if (config.adoptAwsNode === undefined || !(await pathExists(config.adoptAwsNode.checkpoint))) return;
  if (await listening()) {
    throw new Error(
      `aws-node's ipamd is running on this node (it listens on 127.0.0.1:${IPAMD_PORT} and ${config.adoptAwsNode.checkpoint} exists): vpcnet does not start beside it. Keep aws-node off this node (README, "Switching from aws-node") and vpcnet starts and adopts its pods`,
    );
  }
}

/** The IPv4 pool as adoption reads and holds it. */
export function poolForAdoption(pool: AddressPool): AdoptionPool {
  return {
    eniOf: (ip) => pool.eniIdOf(ip),
    routeTable: (eniId) => pool.eni(eniId)?.routeTable,
    hold: (ip, owner) => pool.restoreAssigned(ip, owner),
    eniSourceRules: () =>
      pool
        .enis()
        .filter((e) => e.routeTable !== MAIN_TABLE)
        .map((e) => ({ primaryIp: e.primaryIp, routeTable: e.routeTable })),
  };
}

export interface AdoptionStartDeps {
  readonly config: Pick<AgentConfig, 'adoptAwsNode' | 'externalSnat'>;
  readonly ledger: Ledger;
  readonly pool: AddressPool;
  readonly dataplane: Dataplane;
  readonly pods: PodSource;
  readonly log: Logger;
  readonly now: () => number;
  /** The addressing mode: only IPv4 pods are adopted. */
  readonly family: 'ipv4' | 'ipv6';
  /** Where pods' namespaces are bound (default RUNTIME_NETNS_DIR). */
  readonly netnsDir?: string;
}

/**
 * On a start without a ledger: adopts aws-node's pods when its checkpoint exists. Undefined when
 * there was nothing to adopt from; a report with the problem when the checkpoint was refused.
 */
export async function adoptOnStart(
  d: AdoptionStartDeps,
  loss: LedgerLoss | undefined,
): Promise<AdoptionReport | undefined> {
  const settings = d.config.adoptAwsNode;
  if (loss === undefined || settings === undefined) return undefined;
  const path = settings.checkpoint;
  let checkpoint: Awaited<ReturnType<typeof readAwsNodeCheckpoint>>;
  try {
    checkpoint = await readAwsNodeCheckpoint(path);
  } catch (err) {
    // Nothing is adopted: recovery still holds live pods' addresses from the API.
    d.log.error('adoption: aws-node’s checkpoint refused; its pods are not adopted (restart them)', {
      error: errorText(err),
    });
    return {
      checkpoint: path,
      at: d.now(),
      adopted: [],
      notAdopted: [],
      removed: [],
      problems: [errorText(err)],
    };
  }
  if (checkpoint === undefined) return undefined;
  if (d.family === 'ipv6') {
    const problem = 'IPv6 mode: aws-node’s pods are not adopted; restart them';
    d.log.warn(`adoption: ${problem}`, { checkpoint: path, pods: checkpoint.allocations.length });
    return { checkpoint: path, at: d.now(), adopted: [], notAdopted: [], removed: [], problems: [problem] };
  }
  return adoptAwsNodePods(
    {
      ledger: d.ledger,
      pool: poolForAdoption(d.pool),
      dataplane: d.dataplane,
      pods: d.pods,
      log: d.log,
      now: d.now,
      awsVethPrefix: settings.vethPrefix,
      networkName: VPCNET_NETWORK_NAME,
      snat: !d.config.externalSnat,
      netnsDir: d.netnsDir ?? RUNTIME_NETNS_DIR,
      netnsIdentity,
      removeFirewall: () => d.dataplane.kernel.removeAwsNodeFirewall(),
    },
    path,
    checkpoint,
  );
}
