// Recovered records (src/plan/recovered.ts) as the ledger stores them, parsed field by field.
import type { RecoveredRecord } from '../../plan/recovered.ts';
import { arr, describe, int, LedgerFormatError, obj, optStr, str } from './json-fields.ts';
import { parsePod, parseResource } from './records.ts';

export function parseRecovered(v: unknown, at: string): RecoveredRecord {
  const o = obj(v, at);
  const reason = str(o, 'reason', at);
  if (reason !== 'ledgerMissing' && reason !== 'ledgerCorrupt')
    throw new LedgerFormatError(
      `${at}.reason`,
      `expected ledgerMissing or ledgerCorrupt, got ${describe(reason)}`,
    );
  const ip = optStr(o, 'ip', at);
  const eniId = optStr(o, 'eniId', at);
  const binding = optStr(o, 'binding', at);
  return {
    ...(ip === undefined ? {} : { ip }),
    ...(eniId === undefined ? {} : { eniId }),
    resources: arr(o.resources, `${at}.resources`).map((r, i) => parseResource(r, `${at}.resources[${i}]`)),
    ...(o.pod === undefined ? {} : { pod: parsePod(o.pod, `${at}.pod`) }),
    ...(binding === undefined ? {} : { binding }),
    reason,
    recoveredAt: int(o, 'recoveredAt', at),
  };
}
