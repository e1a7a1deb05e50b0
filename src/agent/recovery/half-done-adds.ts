// Start-up after a crash: ADDs that never answered are undone before the agent serves.
import { settleBinding } from '../../bindings/settle.ts';
import type { Dataplane } from '../../dataplane/dataplane.ts';
import type { Logger } from '../../infra/log.ts';
import type { Ledger } from '../../ledger/ledger.ts';
import { vpcAddressOf } from '../../plan/resource.ts';

/**
 * Recovery after a crash: an attachment still in phase 'adding' belongs to an ADD that never
 * answered, so the runtime will retry or DEL it; remove what it may have created (ownership:
 * only its own recorded resources) and forget it. Runs after the pool was rebuilt, which restored
 * its address as assigned: releasing it starts its cooldown (it may have been a rebuild of a pod
 * that used this address).
 */
export async function recoverHalfDoneAdds(
  ledger: Ledger,
  dataplane: Dataplane,
  addresses: { release(ip: string, eniId?: string): void },
  log: Logger,
): Promise<void> {
  const halfDone = ledger.list().filter((a) => a.phase === 'adding');
  for (const att of halfDone) {
    await dataplane.remove(att.resources, { netns: att.netns });
    ledger.remove(att.key);
    const address = vpcAddressOf(att.resources);
    if (address) addresses.release(address.ip, address.eniId);
    log.warn('removed half-done ADD found at start', { key: att.key, ip: address?.ip, binding: att.branch });
  }
  if (halfDone.length > 0) await ledger.commit();
  // A half-done ADD of a sandbox on a branch ENI may have taken its binding over: settle it back.
  const bindings = new Set(halfDone.flatMap((a) => (a.branch === undefined ? [] : [a.branch])));
  for (const key of bindings) await settleBinding({ ledger, dataplane, log }, key);
}
