// Settling a branch binding: after any change of its sandboxes (an ADD, a DEL, a crash, drift),
// the kernel is made to hold exactly what the binding needs for its holder, recorded before it is
// changed. The one place that decides who holds a pod's branch ENI and what that means on the node,
// used by ADD, DEL, the recovery at start and the reconcile loop alike.
import type { Dataplane } from '../dataplane/dataplane.ts';
import type { Logger } from '../infra/log.ts';
import type { Ledger } from '../ledger/ledger.ts';
import {
  type Attachment,
  type AttachmentKey,
  attachmentHostVeth,
  sameAttachmentKey,
} from '../plan/attachment.ts';
import { type BranchBinding, bindingKeyString } from '../plan/binding.ts';
import { planBranchShared } from '../plan/branch-plan.ts';
import { findDrift, identityOf } from '../plan/kinds.ts';
import { type RecoveredRecord, recoveredHolderKey, recoveredHostVeth } from '../plan/recovered.ts';
import type { Resource } from '../plan/resource.ts';
import { bareDestination, type NodeView } from '../plan/views.ts';

export interface BindingDeps {
  readonly ledger: Ledger;
  readonly dataplane: Dataplane;
  readonly log: Logger;
}

export interface Settled {
  /** The binding is gone (its last sandbox left). */
  readonly tornDown: boolean;
  readonly holder: AttachmentKey | undefined;
  /** What was missing or wrong in the kernel and was restored. */
  readonly fixed: readonly string[];
}

/**
 * The holder: the one given (an ADD takes the holding over), else the current holder while it is
 * still a complete sandbox with its veth, else the newest complete sandbox with a veth on the node.
 */
export function chooseHolder(
  b: BranchBinding,
  members: readonly Attachment[],
  node: NodeView,
  forced?: AttachmentKey,
): Attachment | undefined {
  if (forced) return members.find((m) => sameAttachmentKey(m.key, forced));
  const hasVeth = (a: Attachment) => node.links.some((l) => l.ifname === attachmentHostVeth(a));
  const usable = members.filter((m) => m.phase === undefined && hasVeth(m));
  const current = b.holder && usable.find((m) => sameAttachmentKey(m.key, b.holder as AttachmentKey));
  if (current) return current;
  // The newest; on a tie of milliseconds the later record (the ledger keeps creation order).
  return usable.reduce<Attachment | undefined>(
    (best, m) => (best && best.createdAt > m.createdAt ? best : m),
    undefined,
  );
}

function union(a: readonly Resource[], b: readonly Resource[]): Resource[] {
  const seen = new Set(a.map(identityOf));
  return [...a, ...b.filter((r) => !seen.has(identityOf(r)))];
}

/**
 * Who holds a binding: a sandbox of the pod (an attachment of the binding), or, after a lost
 * ledger, the recovered record of the sandbox veth that recovery found routed to (a sandbox holds
 * first; the recovered one only while no sandbox can).
 */
interface Holding {
  readonly key: AttachmentKey;
  readonly veth: string;
}

/** The recovered record that holds binding `key` (src/agent/recovery/recovery-branches.ts), if any. */
function recoveredHolder(ledger: Ledger, key: string): RecoveredRecord | undefined {
  return ledger.recovered().find((r) => r.binding === key);
}

function holdingOf(
  ledger: Ledger,
  b: BranchBinding,
  members: readonly Attachment[],
  node: NodeView,
  forced?: AttachmentKey,
): Holding | undefined {
  const holder = chooseHolder(b, members, node, forced);
  if (holder) return { key: holder.key, veth: attachmentHostVeth(holder) };
  const recovered = recoveredHolder(ledger, bindingKeyString(b.key));
  const veth = recovered && recoveredHostVeth(recovered);
  if (!recovered || veth === undefined || !node.links.some((l) => l.ifname === veth)) return undefined;
  return { key: recoveredHolderKey(recovered), veth };
}

/** The shared resources the binding needs with `holder` (none while its last sandbox is gone). */
function desiredShared(b: BranchBinding, holder: Holding | undefined): Resource[] {
  return planBranchShared(b, holder?.veth);
}

/**
 * The kernel slot a resource occupies: two resources with one slot cannot both exist. A route's
 * slot is its table, destination and metric, whatever its device (creating one replaces the other).
 */
function slotOf(r: Resource): string {
  if (r.kind !== 'route') return identityOf(r);
  return `route ${r.side} ${r.table} ${bareDestination(r.dst)} ${r.metric ?? 0}`;
}

/**
 * Slots of what the ledger records for an owner other than binding `key`: attachments, other
 * bindings, recovered records. Ownership: a binding never adopts, replaces or removes those, even
 * when its plan names the same route or rule (a claim on another pod's address, refused at ADD, is
 * the way that could happen).
 */
function ownedElsewhere(ledger: Ledger, key: string): Set<string> {
  const out = new Set<string>();
  for (const a of ledger.list()) for (const r of a.resources) out.add(slotOf(r));
  for (const other of ledger.bindings()) {
    if (bindingKeyString(other.key) !== key) for (const r of other.resources) out.add(slotOf(r));
  }
  for (const r of ledger.recovered()) for (const res of r.resources) out.add(slotOf(res));
  return out;
}

/** What the binding may own with `holder`: its plan without what another owner records. */
function desiredOwn(ledger: Ledger, b: BranchBinding, holder: Holding | undefined): Resource[] {
  const foreign = ownedElsewhere(ledger, bindingKeyString(b.key));
  return desiredShared(b, holder).filter((r) => !foreign.has(slotOf(r)));
}

export async function settleBinding(d: BindingDeps, key: string, forced?: AttachmentKey): Promise<Settled> {
  const { ledger, dataplane } = d;
  const b = ledger.binding(key);
  if (!b) return { tornDown: true, holder: undefined, fixed: [] };
  const members = ledger.bindingMembers(key);
  // A binding recovery rebuilt has no sandbox record until one of the pod's sandboxes comes again.
  const needed = members.length > 0 || recoveredHolder(ledger, key) !== undefined;
  if (b.supersededBy !== undefined || !needed) {
    // Ownership: only what this binding still owns (a superseded one owns nothing any more).
    await dataplane.remove(b.resources, { operation: 'teardown of branch binding' });
    if (!needed) ledger.removeBinding(key);
    else ledger.putBinding({ ...b, resources: [] });
    await ledger.commit();
    return { tornDown: !needed, holder: undefined, fixed: [] };
  }
  const node = await dataplane.observeNode();
  const holder = holdingOf(ledger, b, members, node, forced);
  const planned = desiredShared(b, holder);
  const desired = desiredOwn(ledger, b, holder);
  if (desired.length < planned.length) {
    const ids = new Set(desired.map(identityOf));
    d.log.error('branch binding: part of its plan belongs to another owner; left to that owner', {
      binding: key,
      pod: b.pod,
      foreign: planned.filter((r) => !ids.has(identityOf(r))).map(identityOf),
    });
  }
  const holderKey = holder?.key;
  // Durable before the kernel: while it changes, the record lists old and new resources both.
  ledger.putBinding({ ...withHolder(b, holderKey), resources: union(b.resources, desired) });
  await ledger.commit();
  const fixed = await dataplane.converge(desired, b.resources, 'settle branch binding');
  const now = ledger.binding(key) ?? b;
  ledger.putBinding({ ...withHolder(now, holderKey), resources: desired });
  await ledger.commit();
  if (holderKey && (!b.holder || !sameAttachmentKey(b.holder, holderKey))) {
    d.log.info('branch ENI holder', {
      binding: key,
      pod: b.pod,
      vlanId: b.vlanId,
      holder: holderKey,
      was: b.holder,
    });
  }
  return { tornDown: false, holder: holderKey, fixed };
}

function withHolder(b: BranchBinding, holder: AttachmentKey | undefined): BranchBinding {
  const { holder: _, ...rest } = b;
  return holder ? { ...rest, holder } : rest;
}

/** Whether the kernel already holds what the binding needs now (a cheap check on a pass's view). */
export function bindingSettled(ledger: Ledger, b: BranchBinding, node: NodeView): boolean {
  if (b.supersededBy !== undefined) return b.resources.length === 0;
  const key = bindingKeyString(b.key);
  const members = ledger.bindingMembers(key);
  if (members.length === 0 && recoveredHolder(ledger, key) === undefined) return false;
  const holder = holdingOf(ledger, b, members, node);
  const sameHolder =
    holder === undefined
      ? b.holder === undefined
      : b.holder !== undefined && sameAttachmentKey(holder.key, b.holder);
  if (!sameHolder) return false;
  const desired = desiredOwn(ledger, b, holder);
  const ids = new Set(desired.map(identityOf));
  if (b.resources.length !== desired.length || b.resources.some((r) => !ids.has(identityOf(r)))) return false;
  return findDrift(desired, { node }).length === 0;
}
