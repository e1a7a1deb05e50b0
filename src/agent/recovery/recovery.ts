// Recovery of a lost or refused ledger (docs/design.md, Recovery). A missing ledger is not "nothing
// is owned": before the agent collects or lends anything, it looks for evidence of its own pods in
// the kernel (recovery-evidence.ts), the Kubernetes API (pods bound to this node and their podIP)
// and EC2 (addresses on ENIs vpcnet attached). With none, it is a fresh start. With some, what has
// evidence becomes a recovered record held until its DEL, a GC or the reconcile pass; what only
// EC2 lists is quarantined for a cooldown of at least QUARANTINE_MIN_MS and then lent again.
import type { Dataplane } from '../../dataplane/dataplane.ts';
import { errorText } from '../../infra/error-text.ts';
import type { Logger } from '../../infra/log.ts';
import type { AddressPool } from '../../ipam/pool/pool.ts';
import type { LedgerSnapshot } from '../../ledger/format/snapshot.ts';
import { Ledger, type LedgerClock } from '../../ledger/ledger.ts';
import { LedgerLoadError, type LedgerStore } from '../../ledger/storage/store.ts';
import { attachmentKeyString } from '../../plan/attachment.ts';
import { bindingKeyString, type EnforcingMode } from '../../plan/binding.ts';
import { identityOf } from '../../plan/kinds.ts';
import { type RecoveredRecord, type RecoveryReason, recoveredHolderKey } from '../../plan/recovered.ts';
import type { PodMetadata, PodSource } from '../../pods/watch/pod-source.ts';
import type { TrunkFactsSource } from '../branch/trunk-facts.ts';
import { recoverBranches } from './recovery-branches.ts';
import { kernelEvidence } from './recovery-evidence.ts';

/** An address only EC2 lists is not lent again before this, whatever IP_COOLDOWN_PERIOD says. */
export const QUARANTINE_MIN_MS = 30_000;

/** Why the ledger gave no answer at start (a fresh node looks the same as a lost ledger). */
export interface LedgerLoss {
  readonly reason: RecoveryReason;
  /** Where a refused ledger was kept. */
  readonly keptAt?: string;
  readonly error?: string;
}

/**
 * Opens the ledger. A stored snapshot that is refused as corrupt is moved aside (kept for an
 * operator) and the agent starts without it rather than failing every restart; `loss` says so.
 */
export async function openLedger(
  store: LedgerStore,
  clock: LedgerClock,
  log: Logger,
): Promise<{ ledger: Ledger; loss?: LedgerLoss }> {
  let snapshot: LedgerSnapshot | undefined;
  let loss: LedgerLoss | undefined;
  try {
    snapshot = await store.load();
  } catch (err) {
    if (!(err instanceof LedgerLoadError) || store.setAside === undefined) throw err;
    const keptAt = await store.setAside(clock.now());
    log.error('ledger refused as corrupt: kept aside; recovering from the node', {
      path: err.path,
      field: err.field,
      error: err.message,
      keptAt,
    });
    loss = { reason: 'ledgerCorrupt', keptAt, error: err.message };
  }
  if (snapshot === undefined) loss ??= { reason: 'ledgerMissing' };
  return { ledger: Ledger.fromSnapshot(store, clock, snapshot), ...(loss === undefined ? {} : { loss }) };
}

/**
 * The addresses recovery reads and holds: the IPv4 pool as rebuilt from EC2 (manager.init) from
 * an empty ledger, or IPv6 mode's /80 (ipv6-addressing.ts).
 */
export interface RecoveryAddresses {
  /** Every address EC2 lists on this node's pool ENIs, with its ENI (a /80 lists none: too many). */
  listed(): ReadonlyMap<string, { readonly eniId: string; readonly secondaryEni: boolean }>;
  /** The ENI EC2 has `ip` on, for this node; undefined when EC2 does not list it. */
  eniOf(ip: string): string | undefined;
  /** Holds `ip` for `owner`; false when something else holds it already. */
  hold(ip: string, owner: string): boolean;
  /** Whether a listed address is free (neither held nor cooling). */
  isFree(ip: string): boolean;
  /** A listed address cools down as if freed at `freedAt`. */
  quarantine(ip: string, freedAt: number): void;
  readonly cooldownMs: number;
}

/** The IPv4 pool as recovery reads and holds it. */
export function poolRecoveryAddresses(pool: AddressPool): RecoveryAddresses {
  const listed = () => {
    const out = new Map<string, { eniId: string; secondaryEni: boolean }>();
    for (const eni of pool.enis()) {
      for (const ip of pool.addresses(eni.eniId).keys())
        out.set(ip, { eniId: eni.eniId, secondaryEni: eni.deviceNumber !== 0 });
    }
    return out;
  };
  return {
    listed,
    eniOf: (ip) => pool.eniIdOf(ip),
    hold: (ip, owner) => pool.restoreAssigned(ip, owner),
    isFree: (ip) => pool.state(ip)?.kind === 'free',
    quarantine: (ip, freedAt) => pool.restoreCooling(ip, freedAt),
    cooldownMs: pool.cooldownMs,
  };
}

export interface RecoveryDeps {
  readonly ledger: Ledger;
  readonly addresses: RecoveryAddresses;
  readonly dataplane: Pick<Dataplane, 'observeNode'>;
  readonly pods: PodSource;
  readonly log: Logger;
  readonly now: () => number;
  readonly vethPrefix: string;
  /**
   * aws-node's host veth prefix, when vpcnet may follow it (adoption on): its pods that were not
   * adopted are held like vpcnet's own until their veths go (recovery-evidence.ts).
   */
  readonly awsVethPrefix?: string;
  /** The ENIs' primary IPs: their rules are the ENIs' own, not a pod's. */
  readonly protectedAddresses: ReadonlySet<string>;
  /**
   * ENABLE_POD_ENI: pods with their own security groups are rebuilt too (recovery-branches.ts),
   * against the trunk's branch ENIs in EC2.
   */
  readonly branches?: {
    readonly trunkEniId: string | undefined;
    readonly trunkFacts: TrunkFactsSource;
    readonly defaultMode: EnforcingMode;
  };
}

export interface Quarantined {
  readonly ip: string;
  readonly eniId: string;
  /** ms since epoch: lent again from then on. */
  readonly until: number;
}

/** What one recovery at start found (the part that is not in the ledger). */
export interface RecoveryStart {
  readonly reason: RecoveryReason;
  readonly since: number;
  readonly keptAt?: string;
  readonly quarantined: readonly Quarantined[];
}

async function podsOnNode(pods: PodSource, log: Logger): Promise<readonly PodMetadata[]> {
  if (pods.listOnNode === undefined) return [];
  try {
    return await pods.listOnNode();
  } catch (err) {
    log.warn('recovery: cannot list this node’s pods; going by the kernel and EC2 alone', {
      error: errorText(err),
    });
    return [];
  }
}

/**
 * Runs after the pool was rebuilt from EC2 and before anything is collected or lent. Returns
 * undefined for a fresh start (no evidence anywhere).
 */
export async function recoverFromNode(
  deps: RecoveryDeps,
  loss: LedgerLoss,
): Promise<RecoveryStart | undefined> {
  const { ledger, addresses, log, now } = deps;
  const t = now();
  const node = await deps.dataplane.observeNode();
  const pods = await podsOnNode(deps.pods, log);
  const branches =
    deps.branches === undefined
      ? []
      : await recoverBranches({
          node,
          pods,
          trunkEniId: deps.branches.trunkEniId,
          trunkFacts: deps.branches.trunkFacts,
          defaultMode: deps.branches.defaultMode,
          vethPrefix: deps.vethPrefix,
          log,
          now: t,
        });
  // What a rebuilt binding owns is its own, not a pod record's; its holder veth is linked to it.
  const owned = new Set(branches.flatMap((b) => b.binding.resources.map(identityOf)));
  const holderOf = new Map(
    branches.flatMap((b) =>
      b.holderVeth === undefined ? [] : [[b.holderVeth, bindingKeyString(b.binding.key)]],
    ),
  );
  const kernel = kernelEvidence(node, deps.vethPrefix, deps.protectedAddresses, deps.awsVethPrefix)
    .map((k) => ({ ...k, resources: k.resources.filter((r) => !owned.has(identityOf(r))) }))
    // A pod whose address a record holds already (adopted from aws-node) is that record's.
    .filter((k) => k.resources.length > 0 && (k.ip === undefined || !ledger.addressInUse(k.ip)));
  const ec2 = addresses.listed();
  const kernelIps = new Set(kernel.flatMap((k) => (k.ip === undefined ? [] : [k.ip])));
  // A live pod's podIP that EC2 lists on this node but no veth carries (its address and ENI); an
  // address a record holds already (a pod adopted from aws-node) is that record's.
  const apiHeld = pods.flatMap((p) => {
    const eniId =
      p.podIp === undefined || kernelIps.has(p.podIp) || ledger.addressInUse(p.podIp)
        ? undefined
        : addresses.eniOf(p.podIp);
    return p.podIp === undefined || eniId === undefined ? [] : [{ pod: p, ip: p.podIp, eniId }];
  });
  // Addresses on ENIs vpcnet attached are its own; the primary ENI's may have been assigned by
  // anyone before the first start, so alone they are no evidence.
  const onVpcnetEnis = [...ec2.values()].some((a) => a.secondaryEni);
  if (kernel.length === 0 && branches.length === 0 && apiHeld.length === 0 && !onVpcnetEnis) {
    if (loss.reason === 'ledgerCorrupt')
      log.warn('recovery: nothing of vpcnet found on the node; fresh start');
    return undefined;
  }
  const base = { reason: loss.reason, recoveredAt: t } as const;
  const records: RecoveredRecord[] = [
    ...kernel.map((k) => {
      const binding = k.hostVeth === undefined ? undefined : holderOf.get(k.hostVeth);
      // A branch pod's address is its branch ENI's, not the pool's: the binding holds it.
      const ip = binding === undefined ? k.ip : undefined;
      const eniId = ip === undefined ? undefined : addresses.eniOf(ip);
      return {
        ...(ip === undefined ? {} : { ip }),
        ...(eniId === undefined ? {} : { eniId }),
        resources: k.resources,
        ...(binding === undefined ? {} : { binding }),
        ...base,
      };
    }),
    ...apiHeld.map(({ pod, ip, eniId }) => ({
      ip,
      eniId,
      resources: [],
      pod: { namespace: pod.namespace, name: pod.name, uid: pod.uid },
      ...base,
    })),
  ];
  for (const { binding } of branches) ledger.putBinding(binding);
  for (const r of records) {
    ledger.putRecovered(r);
    if (r.ip === undefined) continue;
    if (r.eniId === undefined)
      log.warn('recovery: the kernel routes an address EC2 does not list', { ip: r.ip });
    else if (!addresses.hold(r.ip, attachmentKeyString(recoveredHolderKey(r))))
      log.error('recovery: an address is found twice on the node', { ip: r.ip });
  }
  // Quarantine: what only EC2 lists may have been a pod's a moment ago (peers' ARP and conntrack).
  const until = t + Math.max(addresses.cooldownMs, QUARANTINE_MIN_MS);
  const quarantined: Quarantined[] = [];
  for (const [ip, { eniId }] of ec2) {
    if (!addresses.isFree(ip)) continue;
    const freedAt = until - addresses.cooldownMs;
    addresses.quarantine(ip, freedAt);
    ledger.addCooling(ip, eniId, freedAt);
    quarantined.push({ ip, eniId, until });
  }
  await ledger.commit();
  // After aws-node (its pods adopted) a missing ledger is expected: the node was never vpcnet's.
  const afterAwsNode = ledger.list().some((a) => a.adopted !== undefined);
  const say = afterAwsNode
    ? (fields: Record<string, unknown>) =>
        log.warn(
          'first start after aws-node: holding what its other pods may use until DEL, GC or reconcile',
          fields,
        )
    : (fields: Record<string, unknown>) =>
        log.error(
          'LEDGER LOST: recovered from the node; holding what pods may use until DEL, GC or reconcile',
          fields,
        );
  say({
    reason: loss.reason,
    keptAt: loss.keptAt,
    heldFromKernel: kernel.length,
    branchBindingsRebuilt: branches.length,
    heldFromApi: apiHeld.length,
    quarantined: quarantined.length,
    quarantineEnds: new Date(until).toISOString(),
  });
  return {
    reason: loss.reason,
    since: t,
    ...(loss.keptAt === undefined ? {} : { keptAt: loss.keptAt }),
    quarantined,
  };
}

/** The state JSON's `recovery` section: why, since when, what is held. */
export function recoveryView(ledger: Ledger, start: RecoveryStart | undefined, now: number) {
  const held = ledger.recovered();
  const quarantined = (start?.quarantined ?? []).filter((q) => q.until > now);
  if (held.length === 0 && quarantined.length === 0) return { active: false as const };
  const first = held.reduce<RecoveredRecord | undefined>(
    (a, r) => (a === undefined || r.recoveredAt < a.recoveredAt ? r : a),
    undefined,
  );
  return {
    active: true as const,
    reason: start?.reason ?? first?.reason,
    since: start?.since ?? first?.recoveredAt,
    ...(start?.keptAt === undefined ? {} : { keptAt: start.keptAt }),
    held,
    quarantined,
  };
}
