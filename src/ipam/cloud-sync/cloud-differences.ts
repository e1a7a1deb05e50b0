// What one DescribeNetworkInterfaces of the instance says differs from the pool. Pure: the cloud
// sync decides which differences it trusts (cloud-sync.ts) and what to do about them.

import type { EniInfo } from '../../cloud/cloud.ts';
import type { AddressPool } from '../pool/pool.ts';
import { lendableAddresses, prefixAddresses } from '../prefixes/prefixes.ts';

export type DifferenceKind =
  /** EC2 lists an address on a pool ENI that the pool lacks (assigned outside vpcnet). */
  | 'addressAdded'
  /** The pool has a free or cooling address EC2 no longer lists on its ENI. */
  | 'addressRemoved'
  /** An address a pod holds (pool or ledger) that EC2 no longer lists: kept, never released. */
  | 'heldAddressMissing'
  /** An ENI of the pool, or one a ledger record names, that EC2 no longer lists as attached. */
  | 'eniGone'
  /** An address the pool holds back (IMDS-only mode) that the source lists: lent once confirmed. */
  | 'addressUnconfirmed';

export const DIFFERENCE_KINDS: readonly DifferenceKind[] = [
  'addressAdded',
  'addressRemoved',
  'heldAddressMissing',
  'eniGone',
  'addressUnconfirmed',
];

export interface Difference {
  readonly kind: DifferenceKind;
  readonly eniId: string;
  /** For the address kinds. */
  readonly ip?: string;
  /** addressAdded: the delegated /28 EC2 lists the address in, when it is not a secondary IP. */
  readonly prefix?: string;
}

/** One difference's identity across passes (a difference is acted on once seen in two of them). */
export function differenceKey(d: Difference): string {
  return `${d.kind} ${d.eniId} ${d.ip ?? ''}`;
}

export interface PoolSide {
  readonly pool: AddressPool;
  /** Addresses and ENIs the ledger's attachments hold. */
  readonly ledgerIps: ReadonlySet<string>;
  readonly ledgerEnis: ReadonlySet<string>;
  /** The registry tracks the ENI (attached on its way in or out of the pool, or unmanaged). */
  readonly tracked: (eniId: string) => boolean;
}

export function compareWithEc2(side: PoolSide, described: readonly EniInfo[]): Difference[] {
  const { pool } = side;
  const byId = new Map(described.map((e) => [e.eniId, e]));
  const diffs: Difference[] = [];
  for (const { eniId } of pool.enis()) {
    const eni = byId.get(eniId);
    if (!eni) {
      diffs.push({ kind: 'eniGone', eniId });
      continue;
    }
    const listed = new Set(lendableAddresses(eni));
    for (const [ip, state] of pool.addresses(eniId)) {
      if (listed.has(ip)) {
        if (pool.unconfirmed(ip)) diffs.push({ kind: 'addressUnconfirmed', eniId, ip });
        continue;
      }
      const held = state.kind === 'assigned' || side.ledgerIps.has(ip);
      diffs.push({ kind: held ? 'heldAddressMissing' : 'addressRemoved', eniId, ip });
    }
    // An address the pool has on another ENI (moved) joins once it has left that one. A prefix's
    // addresses say which prefix they are in, so the pool learns it as one (a lost assign reply).
    for (const ip of eni.secondaryIps)
      if (pool.eniIdOf(ip) === undefined) diffs.push({ kind: 'addressAdded', eniId, ip });
    for (const prefix of eni.ipv4Prefixes ?? [])
      for (const ip of prefixAddresses(prefix))
        if (pool.eniIdOf(ip) === undefined) diffs.push({ kind: 'addressAdded', eniId, ip, prefix });
  }
  for (const eniId of side.ledgerEnis) {
    if (pool.eni(eniId) || byId.has(eniId) || side.tracked(eniId)) continue;
    diffs.push({ kind: 'eniGone', eniId });
  }
  return diffs;
}
