import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Ledger } from '../../ledger/ledger.ts';
import { attachment } from '../../ledger/testing/journal-fixtures.ts';
import { MemoryLedgerStore } from '../../ledger/testing/memory-store.ts';
import { recordFor } from './adopted-lookup.ts';

test("only an adopted record answers a request naming another network; vpcnet's own need the whole key", async () => {
  const ledger = await Ledger.open(new MemoryLedgerStore(), { now: () => 1 });
  const own = attachment(1);
  const adopted = { ...attachment(2), adopted: { from: 'aws-node' as const, at: 1 } };
  ledger.put(own);
  ledger.put(adopted);
  const other = (a: typeof own) => ({ ...a.key, network: 'aws-cni' });
  assert.equal(recordFor(ledger, own.key), ledger.get(own.key));
  assert.equal(recordFor(ledger, other(own)), undefined, "a vpcnet record is not another network's");
  assert.equal(recordFor(ledger, other(adopted))?.key.containerId, 'c2');
  assert.equal(recordFor(ledger, { ...other(adopted), ifName: 'net1' }), undefined);
});
