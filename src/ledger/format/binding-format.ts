// A branch binding as the ledger stores it, read back field by field.
import { TRUNK_DRIVERS } from '../../infra/trunk-driver.ts';
import type { BranchBinding } from '../../plan/binding.ts';
import { arr, describe, int, LedgerFormatError, nonEmpty, obj, optStr } from './json-fields.ts';
import { parseAttachmentKey, parsePod, parseResource } from './records.ts';

function oneOf<T extends string>(v: unknown, values: readonly T[], at: string): T {
  if (typeof v === 'string' && (values as readonly string[]).includes(v)) return v as T;
  throw new LedgerFormatError(at, `expected one of ${values.join(', ')}, got ${describe(v)}`);
}

export function parseBinding(v: unknown, at: string): BranchBinding {
  const o = obj(v, at);
  const k = obj(o.key, `${at}.key`);
  const supersededBy = optStr(o, 'supersededBy', at);
  return {
    key: { podUid: nonEmpty(k, 'podUid', `${at}.key`), eniId: nonEmpty(k, 'eniId', `${at}.key`) },
    pod: parsePod(o.pod, `${at}.pod`),
    vlanId: int(o, 'vlanId', at),
    mac: nonEmpty(o, 'mac', at),
    ip: nonEmpty(o, 'ip', at),
    subnetCidr: nonEmpty(o, 'subnetCidr', at),
    gateway: nonEmpty(o, 'gateway', at),
    trunkDev: nonEmpty(o, 'trunkDev', at),
    table: int(o, 'table', at),
    mode: oneOf(o.mode, ['strict', 'standard'] as const, `${at}.mode`),
    driver: oneOf(o.driver, TRUNK_DRIVERS, `${at}.driver`),
    mtu: int(o, 'mtu', at),
    ...(o.holder === undefined ? {} : { holder: parseAttachmentKey(o.holder, `${at}.holder`) }),
    resources: arr(o.resources, `${at}.resources`).map((r, i) => parseResource(r, `${at}.resources[${i}]`)),
    ...(supersededBy === undefined ? {} : { supersededBy }),
    createdAt: int(o, 'createdAt', at),
  };
}
