// What every resource kind defines: how it is created, removed, checked against the kernel's
// views and repaired, how it is named, and how leftovers of its kind are recognised. A new kind
// (a VLAN device, a route table, a prefix) is one new file beside this one plus one line in
// ../kinds.ts; ADD, DEL, CHECK, the reconcile loop and every kernel driver pick it up from there.
import type { Side, Step } from '../kernel-op.ts';
import type { Resource } from '../resource.ts';
import type { NodeView, PodView } from '../views.ts';

/** A resource that is missing or wrong. */
export interface Finding {
  readonly resource: Resource;
  /** As an operator reads it: "rule to 10.0.0.5 lookup main prio 512 missing". */
  readonly problem: string;
  /** Steps that restore it in place; absent when only building the pod network again can. */
  readonly repair?: readonly Step[];
}

export interface Views {
  readonly node: NodeView;
  /** The pod's namespace; absent when it is not read (node-only checks). */
  readonly pod?: Extract<PodView, { reachable: true }>;
}

/** A kernel object that looks like vpcnet's and that no record owns: what GC would remove. */
export interface Orphan {
  readonly identity: string;
  readonly description: string;
  readonly remove: readonly Step[];
}

export interface CollectContext {
  /** Prefix of the host veths this agent names. */
  readonly vethPrefix: string;
  /** Whether a record in the ledger owns the resource with this identity. */
  readonly owns: (identity: string) => boolean;
  /** Addresses whose rules and SNAT elements are never collected (the ENIs' primary IPs). */
  readonly protectedAddresses: ReadonlySet<string>;
}

/** Reads one stored resource's fields (the ledger's parser, which names a bad field in its error). */
export interface FieldReader {
  /** A non-empty string. */
  str(name: string): string;
  optStr(name: string): string | undefined;
  /** A non-negative integer. */
  int(name: string): number;
  optInt(name: string): number | undefined;
  optBool(name: string): boolean | undefined;
  side(name: string): Side;
  /** One of the given strings. */
  oneOf<T extends string>(name: string, values: readonly T[]): T;
}

export interface KindRules<R extends Resource> {
  /** A stored record of this kind, field by field (the `kind` field is already read). */
  parse(read: FieldReader): R;
  /** Steps that create it, in order (each on its side). */
  create(r: R): Step[];
  /** Steps that remove it; none when it goes with something else (the pod's veth, the cloud). */
  remove(r: R): Step[];
  /** What is wrong with it in the views; empty when it is there as planned. */
  check(r: R, views: Views): Finding[];
  /** Equal for two records of the same kernel object (GC compares the kernel with the ledger). */
  identity(r: R): string;
  describe(r: R): string;
  /** Node-side removals run in this order: rules (0) before routes (1) before links (2). */
  readonly removalRank: number;
  /** Kernel objects of this kind on the node that look like vpcnet's and that no record owns. */
  orphans?(node: NodeView, ctx: CollectContext): Orphan[];
}
