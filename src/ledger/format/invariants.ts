// What the Ledger's lookups and the operations above it take for granted of its records, checked
// when a ledger is loaded. Records that break it were not written by this code (a CRC guards
// against damage on disk, not against a bug or a hand edit), and trusting them could make one
// pod's DEL tear down what another pod uses (ownership): such a ledger is refused, as a damaged
// file is, and the agent recovers from the node.
import { type Attachment, attachmentKeyString } from '../../plan/attachment.ts';
import { type BranchBinding, bindingKeyString } from '../../plan/binding.ts';
import { LedgerFormatError } from './json-fields.ts';
import type { LedgerSnapshot } from './snapshot.ts';

/** The addresses an attachment holds as its own (findByIp and the pools key by them). */
function ownAddresses(a: Attachment): string[] {
  return a.resources.flatMap((r) => {
    if (r.kind === 'vpcAddress') return [r.ip];
    if (r.kind === 'ipv6Address' && r.side === 'pod') return [r.cidr.split('/')[0] ?? r.cidr];
    return [];
  });
}

function hostVeths(a: Attachment): string[] {
  return a.resources.flatMap((r) => (r.kind === 'veth' ? [r.hostName] : []));
}

/** One holder per value: throws when `value` is held by `owner` and an earlier record both. */
class OneHolder {
  readonly #holders = new Map<string, string>();
  constructor(
    readonly list: string,
    readonly what: string,
  ) {}

  claim(value: string, owner: string): void {
    const first = this.#holders.get(value);
    if (first !== undefined && first !== owner) {
      throw new LedgerFormatError(
        `${this.list}[${owner}]`,
        `holds ${this.what} ${value}, as ${this.list}[${first}] does: two records cannot own one`,
      );
    }
    this.#holders.set(value, owner);
  }
}

function liveBindings(bindings: readonly BranchBinding[]): BranchBinding[] {
  return bindings.filter((b) => b.supersededBy === undefined);
}

/**
 * Throws LedgerFormatError naming the first record that breaks one of these:
 * - an address (an IPv4 VPC address, an IPv6 pod's /128) is one attachment's, and a host veth one
 *   attachment's: a DEL frees its address and removes its veth by name;
 * - a live (not superseded) branch binding has its address and its VLAN ID on its trunk to itself
 *   (an ADD supersedes the binding that had them in the same write);
 * - an attachment of a branch ENI names a binding that is there (a binding goes with its last one).
 * Not checked: that a binding's holder is there. The code writes that state itself: a superseded
 * binding keeps the holder its last settle named, and a DEL of the holder writes its removal
 * before the settle that passes the holding on (src/agent/branch/del-branch.ts; a failed settle is
 * the reconcile loop's to finish). Settling never trusts a holder that is gone (settle.ts).
 */
export function checkLedgerInvariants(s: LedgerSnapshot): void {
  const addresses = new OneHolder('attachments', 'address');
  const veths = new OneHolder('attachments', 'host veth');
  const bindingKeys = new Set(s.bindings.map((b) => bindingKeyString(b.key)));
  for (const a of s.attachments) {
    const key = attachmentKeyString(a.key);
    for (const ip of ownAddresses(a)) addresses.claim(ip, key);
    for (const veth of hostVeths(a)) veths.claim(veth, key);
    if (a.branch !== undefined && !bindingKeys.has(a.branch))
      throw new LedgerFormatError(
        `attachments[${key}].branch`,
        `names binding ${a.branch}, which is not there`,
      );
  }
  const bindingIps = new OneHolder('bindings', 'address');
  const vlans = new OneHolder('bindings', 'VLAN');
  for (const b of liveBindings(s.bindings)) {
    const key = bindingKeyString(b.key);
    bindingIps.claim(b.ip, key);
    vlans.claim(`${b.vlanId} on ${b.trunkDev}`, key);
  }
}
