// Recovery of pods with their own security groups after a lost or refused ledger (docs/design.md,
// Recovery). Their networks are a branch device on the trunk (`vlb…`), a route table and rules,
// which the start-up pass would otherwise collect as no one's. A binding is rebuilt only where
// three sources agree on it:
//   - the kernel: a branch device whose name is the one vpcnet derives from the pod's UID and its
//     branch ENI (names.ts), with that ENI's MAC (and VLAN ID, for a vlan device);
//   - the Kubernetes API: a pod of this node whose pod-eni annotation names that branch ENI;
//   - EC2: the ENI associated with this node's trunk under that VLAN ID with that MAC (when EC2
//     cannot be asked, kernel and API agreeing are enough to hold; a "no" from EC2 holds nothing).
// What the binding needs and the kernel shows (device, table routes, rules, the route to the pod
// through its holder veth) becomes the binding's; the holder veth stays a recovered record of its
// own, linked to the binding, so the sandbox's DEL (or its veth's end) lets the binding go.
import { errorText } from '../../infra/error-text.ts';
import type { Logger } from '../../infra/log.ts';
import type { BranchBinding, EnforcingMode } from '../../plan/binding.ts';
import {
  BRANCH_TABLE_BASE,
  BRANCH_TABLE_LIMIT,
  branchDeviceName,
  planBranchShared,
} from '../../plan/branch-plan.ts';
import type { TrunkDriver } from '../../plan/kernel-op.ts';
import { findDrift } from '../../plan/kinds.ts';
import { MAIN_TABLE, type NodeView } from '../../plan/views.ts';
import { type BranchEni, POD_ENI_ANNOTATION, parsePodEniAnnotation } from '../../pods/pod-eni.ts';
import type { PodMetadata } from '../../pods/watch/pod-source.ts';
import type { TrunkFactsSource } from '../branch/trunk-facts.ts';

export interface BranchRecoveryDeps {
  readonly node: NodeView;
  /** This node's pods as the API lists them. */
  readonly pods: readonly PodMetadata[];
  /** The trunk ENI, when one is attached. */
  readonly trunkEniId: string | undefined;
  readonly trunkFacts: TrunkFactsSource | undefined;
  /** POD_SECURITY_GROUP_ENFORCING_MODE: the mode when the kernel shows neither mode's rules. */
  readonly defaultMode: EnforcingMode;
  readonly vethPrefix: string;
  readonly log: Logger;
  readonly now: number;
}

export interface RecoveredBranch {
  readonly binding: BranchBinding;
  /** The sandbox veth the kernel routes the pod through, if any. */
  readonly holderVeth: string | undefined;
}

interface Claim {
  readonly pod: PodMetadata;
  readonly eni: BranchEni;
}

/** Annotated pods of the node, with their parsed annotation; malformed ones prove nothing. */
function claims(pods: readonly PodMetadata[]): Claim[] {
  return pods.flatMap((pod) => {
    const value = pod.annotations[POD_ENI_ANNOTATION];
    if (value === undefined) return [];
    try {
      return [{ pod, eni: parsePodEniAnnotation(value) }];
    } catch {
      return [];
    }
  });
}

/** Whether EC2 contradicts the claim: true for a "no", false for a "yes" or no answer. */
async function ec2Denies(d: BranchRecoveryDeps, c: Claim): Promise<boolean> {
  if (d.trunkEniId === undefined || d.trunkFacts === undefined) return false;
  try {
    const seen = await d.trunkFacts.branch(d.trunkEniId, c.eni.eniId);
    return seen === undefined || seen.vlanId !== c.eni.vlanId || seen.mac !== c.eni.mac;
  } catch (err) {
    d.log.warn('recovery: EC2 cannot confirm a branch ENI; holding it on the kernel and the API', {
      pod: { namespace: c.pod.namespace, name: c.pod.name },
      eni: c.eni.eniId,
      error: errorText(err),
    });
    return false;
  }
}

/** The branch table the kernel routes through `dev`, if any. */
function tableOf(node: NodeView, dev: string): number | undefined {
  return node.routes.find(
    (r) => r.dev === dev && r.table >= BRANCH_TABLE_BASE && r.table <= BRANCH_TABLE_LIMIT,
  )?.table;
}

/** The sandbox veth the kernel sends the pod's address to, in `table`. */
function holderVethOf(node: NodeView, ip: string, table: number, vethPrefix: string): string | undefined {
  const route = node.routes.find(
    (r) => r.table === table && r.dev?.startsWith(vethPrefix) && (r.dst === ip || r.dst === `${ip}/32`),
  );
  return route?.dev;
}

export async function recoverBranches(d: BranchRecoveryDeps): Promise<RecoveredBranch[]> {
  const out: RecoveredBranch[] = [];
  const usedTables = new Set<number>();
  for (const c of claims(d.pods)) {
    const key = { podUid: c.pod.uid, eniId: c.eni.eniId };
    const name = branchDeviceName(key);
    const link = d.node.links.find((l) => l.ifname === name);
    if (!link || (link.kind !== 'vlan' && link.kind !== 'macvlan')) continue;
    const which = { pod: { namespace: c.pod.namespace, name: c.pod.name }, device: name, eni: c.eni.eniId };
    if (link.address !== c.eni.mac || (link.kind === 'vlan' && link.vlanId !== c.eni.vlanId)) {
      d.log.warn('recovery: a branch device does not match its pod’s annotation; not held', which);
      continue;
    }
    if (await ec2Denies(d, c)) {
      d.log.warn(
        'recovery: EC2 does not show the branch ENI on this node’s trunk; its device is not held',
        which,
      );
      continue;
    }
    const table = tableOf(d.node, name) ?? freeTable(d.node, usedTables);
    usedTables.add(table);
    const strict = d.node.rules.some((r) => r.iif === name && r.table === table);
    const standard = d.node.rules.some((r) => r.table === MAIN_TABLE && r.dst === c.eni.ip);
    const mode: EnforcingMode = strict ? 'strict' : standard ? 'standard' : d.defaultMode;
    const holderVeth = holderVethOf(d.node, c.eni.ip, mode === 'strict' ? table : MAIN_TABLE, d.vethPrefix);
    const binding: BranchBinding = {
      key,
      pod: { namespace: c.pod.namespace, name: c.pod.name, uid: c.pod.uid },
      vlanId: c.eni.vlanId,
      mac: c.eni.mac,
      ip: c.eni.ip,
      subnetCidr: c.eni.subnetCidr,
      gateway: c.eni.gateway,
      trunkDev: link.parent ?? '',
      table,
      mode,
      driver: link.kind as TrunkDriver,
      mtu: link.mtu,
      resources: [],
      createdAt: d.now,
    };
    // What the binding needs with that holder and the kernel still has: held now, the rest repaired by settling.
    const present = planBranchShared(binding, holderVeth).filter(
      (r) => findDrift([r], { node: d.node }).length === 0,
    );
    out.push({ binding: { ...binding, resources: present }, holderVeth });
  }
  return out;
}

/** A branch table neither the kernel nor another recovered binding uses. */
function freeTable(node: NodeView, used: ReadonlySet<number>): number {
  const taken = new Set([...used, ...node.routes.map((r) => r.table)]);
  for (let t = BRANCH_TABLE_BASE; t <= BRANCH_TABLE_LIMIT; t++) if (!taken.has(t)) return t;
  throw new Error(
    `no free route table for a recovered branch ENI (${BRANCH_TABLE_BASE}–${BRANCH_TABLE_LIMIT} all in use)`,
  );
}
