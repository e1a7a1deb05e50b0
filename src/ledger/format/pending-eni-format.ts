// ENIs vpcnet is part-way through creating or freeing, as the ledger stores them (schema 3). A
// record is written before the cloud call it covers, so a restart finishes the work instead of
// leaking the ENI: attach it or delete it, detach it and delete it.
import { describe, int, LedgerFormatError, nonEmpty, obj, optStr } from './json-fields.ts';

/**
 * Where an ENI vpcnet created or is freeing stands:
 *   attaching .. created, AttachNetworkInterface not known to have happened
 *   detaching .. chosen to be freed; `attachmentId` is to be detached, then the ENI deleted
 *   deleting ... detached (or never attached): DeleteNetworkInterface until EC2 says it is gone
 */
export type PendingEniStep = 'attaching' | 'detaching' | 'deleting';

export interface PendingEni {
  readonly eniId: string;
  readonly step: PendingEniStep;
  /** The ENI attachment to detach (step detaching). */
  readonly attachmentId?: string;
  /** ms since epoch: when the record took this step. */
  readonly since: number;
}

const STEPS: readonly PendingEniStep[] = ['attaching', 'detaching', 'deleting'];

export function parsePendingEni(v: unknown, at: string): PendingEni {
  const o = obj(v, at);
  const step = o.step;
  if (typeof step !== 'string' || !(STEPS as readonly string[]).includes(step))
    throw new LedgerFormatError(`${at}.step`, `expected one of ${STEPS.join(', ')}, got ${describe(step)}`);
  const attachmentId = optStr(o, 'attachmentId', at);
  if (step === 'detaching' && (attachmentId === undefined || attachmentId === ''))
    throw new LedgerFormatError(`${at}.attachmentId`, 'a detaching ENI needs the attachment to detach');
  return {
    eniId: nonEmpty(o, 'eniId', at),
    step: step as PendingEniStep,
    ...(attachmentId === undefined ? {} : { attachmentId }),
    since: int(o, 'since', at),
  };
}
