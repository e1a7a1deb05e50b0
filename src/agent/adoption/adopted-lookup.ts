// A runtime's request for a pod adopted from aws-node may name the network of the conflist it used
// when the pod started (aws-node's `aws-cni`), not vpcnet's: an adopted record answers for its
// container ID and interface whatever network the request names. Only adopted records: vpcnet's
// own are keyed by the whole (network, container ID, interface), as the CNI spec says.
import type { Ledger } from '../../ledger/ledger.ts';
import type { Attachment, AttachmentKey } from '../../plan/attachment.ts';

export function recordFor(ledger: Pick<Ledger, 'get' | 'list'>, key: AttachmentKey): Attachment | undefined {
  return (
    ledger.get(key) ??
    ledger
      .list()
      .find(
        (a) =>
          a.adopted !== undefined && a.key.containerId === key.containerId && a.key.ifName === key.ifName,
      )
  );
}
