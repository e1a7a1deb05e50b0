// ENI creations vpcnet has asked EC2 for and not yet followed with an `attaching` record, as the
// ledger stores them (an addition within schema 4: an agent without it ignores the list). The
// record is durable before CreateNetworkInterface, so an agent killed while EC2 answered, or
// left with an ambiguous error, knows afterwards that an ENI of its own may sit detached, and
// looks for it by its createdAt tag instead of leaving it to the leaked-ENI sweep's grace.
import { int, nonEmpty, obj } from './json-fields.ts';

export interface EniCreate {
  /** Random, this record's id. */
  readonly token: string;
  /** ms since epoch: the value of the ENI's createdAt tag (which EC2 keeps to the second). */
  readonly createdAt: number;
  /** The subnet the ENI was asked for in (for the log and the state). */
  readonly subnetId: string;
  /** ms since epoch: when the record was written. */
  readonly since: number;
}

export function parseEniCreate(v: unknown, at: string): EniCreate {
  const o = obj(v, at);
  return {
    token: nonEmpty(o, 'token', at),
    createdAt: int(o, 'createdAt', at),
    subnetId: nonEmpty(o, 'subnetId', at),
    since: int(o, 'since', at),
  };
}
