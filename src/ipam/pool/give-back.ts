// Giving addresses back to EC2 (UnassignPrivateIpAddresses, of secondary IPs or /28 prefixes): they
// leave the pool before the call, so no ADD takes one being given back, and come back only when EC2
// certainly did not apply the call. After a 5xx, a timeout or "not assigned" (a retry of a call that
// had succeeded) they may be gone: lent, a pod's traffic would be dropped. They stay out; the EC2
// sync adopts them again if EC2 still lists them.
import { CloudError } from '../../cloud/cloud.ts';
import { isThrottled } from '../../cloud/ec2-retry.ts';
import { cloudErrorText } from '../cloud-sync/cloud-error-text.ts';
import type { AddressPool } from './pool.ts';

/**
 * Runs `call` for addresses `ips` of `eniId`, already removed from the pool by the caller; on a
 * failure that certainly changed nothing, puts them back (and runs `undo`). Throws naming `doing`.
 */
export async function giveBack(
  pool: AddressPool,
  doing: string,
  eniId: string,
  ips: readonly string[],
  call: () => Promise<void>,
  undo?: () => void,
): Promise<void> {
  try {
    await call();
  } catch (err) {
    const notApplied =
      isThrottled(err) ||
      (err instanceof CloudError && !err.retryable && !err.code.startsWith('InvalidParameter'));
    if (notApplied) {
      pool.addAddresses(eniId, ips);
      undo?.();
    }
    throw new Error(`cannot ${doing}: ${cloudErrorText(err)}`, { cause: err });
  }
}
