// What a removal need not ask the kernel for: a route or an address on a link that the same
// removal deletes goes with the link (the kernel flushes a deleted link's routes, in every table,
// and its addresses). Asking for it first changed nothing and cost each DEL one more pass through
// the kernel's RTNL lock, which a burst of DELs queues on. Ownership is unchanged: the link is
// this attachment's own, so whatever goes with it was its own too.
import type { KernelOp } from '../plan/kernel-op.ts';

export function withoutWhatGoesWithItsLink(ops: readonly KernelOp[]): KernelOp[] {
  const deleted = new Set(ops.flatMap((op) => (op.op === 'linkDel' ? [op.dev] : [])));
  return ops.filter((op) => !((op.op === 'routeDel' || op.op === 'addrDel') && deleted.has(op.dev)));
}
