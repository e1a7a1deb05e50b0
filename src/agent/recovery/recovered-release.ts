// Letting go of a recovered record (src/plan/recovered.ts): exactly as a DEL lets go of an
// attachment, its kernel objects are removed, then its address is released with cooldown. Who may
// do it: the DEL whose key hashes to its host veth, a CNI GC that lists no such key, and the
// reconcile pass once its veth is gone (or, for a record the Kubernetes API held, once the pod left
// the API). Nothing else collects one.
import { settleBinding } from '../../bindings/settle.ts';
import type { Dataplane } from '../../dataplane/dataplane.ts';
import { errorText } from '../../infra/error-text.ts';
import type { Logger } from '../../infra/log.ts';
import type { Ledger } from '../../ledger/ledger.ts';
import { type RecoveredRecord, recoveredHostVeth } from '../../plan/recovered.ts';
import type { NodeView } from '../../plan/views.ts';
import type { PodSource } from '../../pods/watch/pod-source.ts';
import type { AddressSource } from '../address-source.ts';

export interface RecoveredReleaseDeps {
  readonly ledger: Ledger;
  readonly dataplane: Dataplane;
  readonly addresses: Pick<AddressSource, 'release'>;
  readonly log: Logger;
}

/** The recovered record holding host veth `name`, if any. */
export function recoveredByVeth(ledger: Ledger, name: string): RecoveredRecord | undefined {
  return ledger.recovered().find((r) => recoveredHostVeth(r) === name);
}

/**
 * Removes the record's kernel objects, then the record, and releases its address with cooldown.
 * Returns false when the record was already gone (another path released it meanwhile).
 */
export async function releaseRecovered(
  deps: RecoveredReleaseDeps,
  record: RecoveredRecord,
  why: string,
): Promise<boolean> {
  const { ledger, dataplane, addresses, log } = deps;
  if (!ledger.recovered().includes(record)) return false;
  await dataplane.remove(record.resources);
  if (!ledger.removeRecovered(record)) return false;
  if (record.ip !== undefined) addresses.release(record.ip, record.eniId);
  await ledger.commit();
  // The veth held a recovered branch binding: with it gone, the binding settles (and goes, unless
  // a sandbox of the pod has come again meanwhile).
  if (record.binding !== undefined) await settleBinding(deps, record.binding);
  log.warn('recovered record released', {
    ip: record.ip,
    hostVeth: recoveredHostVeth(record),
    pod: record.pod,
    why,
    recoveredLeft: ledger.recovered().length,
  });
  return true;
}

export interface RecoveredSweepDeps extends RecoveredReleaseDeps {
  readonly pods: PodSource;
}

/** Whether the API still shows the record's pod with its address; an API error keeps it. */
async function podStillThere(pods: PodSource, record: RecoveredRecord, log: Logger): Promise<boolean> {
  const { namespace, name, uid } = record.pod ?? {};
  if (namespace === undefined || name === undefined) return false;
  try {
    const pod = await pods.lookup(namespace, name, uid);
    return pod !== undefined && (uid === undefined || pod.uid === uid) && pod.podIp === record.ip;
  } catch (err) {
    log.warn('recovery: cannot ask the API about a held pod; keeping it', {
      pod: record.pod,
      error: errorText(err),
    });
    return true;
  }
}

/**
 * The reconcile pass's part: releases records whose host veth is gone from `node` (the pod's
 * namespace went with it), and records the API held whose pod left the API. Returns what it released.
 */
export async function sweepRecovered(deps: RecoveredSweepDeps, node: NodeView): Promise<string[]> {
  const released: string[] = [];
  for (const record of deps.ledger.recovered()) {
    const veth = recoveredHostVeth(record);
    let why: string | undefined;
    if (record.pod !== undefined) {
      if (!(await podStillThere(deps.pods, record, deps.log)))
        why = 'its pod is gone from the Kubernetes API';
    } else if (veth === undefined || !node.links.some((l) => l.ifname === veth)) {
      why = veth === undefined ? 'no host veth holds its address' : `host veth ${veth} is gone`;
    }
    if (why === undefined) continue;
    if (await releaseRecovered(deps, record, why))
      released.push(`recovered ${record.ip ?? '(no address)'}${veth === undefined ? '' : ` (${veth})`}`);
  }
  return released;
}
