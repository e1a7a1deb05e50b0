// An ADD of a pod with its own security groups makes sure its branch binding is recorded (its own
// route table, its mode). When the claim check (src/agent/branch/claim.ts) found that the resource
// controller has given another binding's VLAN ID, address or ENI to this pod (the API no longer
// shows that pod with it, and EC2 shows it on this pod's branch ENI), the caller names that binding:
// it is marked superseded here, its shared resources are removed by the caller through
// settleBinding, and the late DELs of its sandboxes then remove only their own veths. Nothing is
// superseded on the annotation's word alone.
import type { Ledger } from '../ledger/ledger.ts';
import type { PodIdentity } from '../plan/attachment.ts';
import { type BranchBinding, type BranchEni, bindingKeyString, type EnforcingMode } from '../plan/binding.ts';
import { BRANCH_TABLE_BASE, BRANCH_TABLE_LIMIT } from '../plan/branch-plan.ts';
import type { TrunkDriver } from '../plan/kernel-op.ts';

/** What an ADD admits: the pod, its branch ENI, and how the node reaches it. */
export interface BranchAdmission extends BranchEni {
  readonly pod: PodIdentity & { readonly uid: string };
  readonly trunkDev: string;
  readonly mode: EnforcingMode;
  readonly driver: TrunkDriver;
  readonly mtu: number;
  readonly now: number;
}

export interface Admitted {
  readonly key: string;
  /** Bindings this one superseded (their keys): the caller removes their shared resources. */
  readonly superseded: readonly string[];
}

/** The lowest route table from BRANCH_TABLE_BASE that no recorded binding uses. */
export function freeBranchTable(ledger: Ledger): number {
  const used = new Set(ledger.bindings().map((b) => b.table));
  for (let t = BRANCH_TABLE_BASE; t <= BRANCH_TABLE_LIMIT; t++) if (!used.has(t)) return t;
  throw new Error(
    `no free route table for a branch ENI (${BRANCH_TABLE_BASE}–${BRANCH_TABLE_LIMIT} all in use)`,
  );
}

/**
 * Records the binding (in memory: the caller commits it with the attachment's intent), and marks
 * superseded the bindings the claim check cleared for it (`supersede`), and only those.
 */
export function admitBinding(ledger: Ledger, a: BranchAdmission, supersede: readonly string[]): Admitted {
  const key = bindingKeyString({ podUid: a.pod.uid, eniId: a.eniId });
  const superseded: string[] = [];
  for (const other of supersede) {
    const b = ledger.binding(other);
    if (other === key || b === undefined || b.supersededBy !== undefined) continue;
    ledger.putBinding({ ...b, supersededBy: key });
    superseded.push(other);
  }
  const existing = ledger.binding(key);
  const binding: BranchBinding = existing
    ? { ...existing, mode: a.mode, mtu: a.mtu, pod: a.pod }
    : {
        key: { podUid: a.pod.uid, eniId: a.eniId },
        pod: a.pod,
        vlanId: a.vlanId,
        mac: a.mac,
        ip: a.ip,
        subnetCidr: a.subnetCidr,
        gateway: a.gateway,
        trunkDev: a.trunkDev,
        table: freeBranchTable(ledger),
        mode: a.mode,
        driver: a.driver,
        mtu: a.mtu,
        resources: [],
        createdAt: a.now,
      };
  ledger.putBinding(binding);
  return { key, superseded };
}
