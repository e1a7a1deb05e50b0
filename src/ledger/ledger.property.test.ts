// Property: whatever the interleaving of changes, commits (some failing at a step of the atomic
// save) and crashes, a reopened ledger equals the state as of the last successful commit
// (durable before success), no attachment appears twice, and the file always parses.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { type Attachment, attachmentKeyString } from '../plan/attachment.ts';
import { Ledger } from './ledger.ts';
import { type CoolingAddress, parseLedgerSnapshot } from './snapshot.ts';
import { FileLedgerStore } from './store.ts';
import { MemoryLedgerFs } from './testing/memory-fs.ts';

const PATH = '/state/ledger.json';
const clock = { now: () => 1_000 };

type Op =
  | { readonly op: 'put'; readonly id: number; readonly ip: number }
  | { readonly op: 'remove'; readonly id: number }
  | { readonly op: 'addCooling'; readonly ip: number; readonly freedAt: number }
  | { readonly op: 'removeCooling'; readonly ip: number }
  | { readonly op: 'commit'; readonly fail: 'write' | 'fsync' | 'rename' | undefined }
  | { readonly op: 'burst'; readonly ids: readonly number[] }
  | { readonly op: 'crash' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('put' as const), id: fc.nat(6), ip: fc.nat(20) }),
  fc.record({ op: fc.constant('remove' as const), id: fc.nat(6) }),
  fc.record({ op: fc.constant('addCooling' as const), ip: fc.nat(20), freedAt: fc.nat(10_000) }),
  fc.record({ op: fc.constant('removeCooling' as const), ip: fc.nat(20) }),
  fc.record({
    op: fc.constant('commit' as const),
    fail: fc.constantFrom(undefined, undefined, 'write' as const, 'fsync' as const, 'rename' as const),
  }),
  fc.record({ op: fc.constant('burst' as const), ids: fc.array(fc.nat(6), { minLength: 1, maxLength: 4 }) }),
  fc.record({ op: fc.constant('crash' as const) }),
);

function attachment(id: number, ip: number): Attachment {
  const addr = `10.0.1.${ip}`;
  return {
    key: { network: 'vpcnet', containerId: `c${id}`, ifName: 'eth0' },
    pod: { uid: `uid-${id}` },
    netns: `/var/run/netns/p${id}`,
    createdAt: id,
    resources: [{ kind: 'vpcAddress', ip: addr, eniId: 'eni-1' }],
  };
}

interface Model {
  attachments: Map<string, Attachment>;
  cooling: Map<string, CoolingAddress>;
}

const copy = (m: Model): Model => ({ attachments: new Map(m.attachments), cooling: new Map(m.cooling) });

function assertEquals(ledger: Ledger, model: Model): void {
  const byKey = (a: Attachment, b: Attachment) =>
    attachmentKeyString(a.key).localeCompare(attachmentKeyString(b.key));
  assert.deepEqual(ledger.list().sort(byKey), [...model.attachments.values()].sort(byKey));
  const byIp = (a: CoolingAddress, b: CoolingAddress) => a.ip.localeCompare(b.ip);
  assert.deepEqual(ledger.coolingAddresses().sort(byIp), [...model.cooling.values()].sort(byIp));
}

function assertFileParses(fs: MemoryLedgerFs): void {
  const text = fs.files.get(PATH);
  if (text === undefined) return;
  // parseLedgerSnapshot also rejects an attachment key recorded twice.
  const snap = parseLedgerSnapshot(JSON.parse(text));
  const keys = snap.attachments.map((a) => attachmentKeyString(a.key));
  assert.equal(new Set(keys).size, keys.length);
}

test('after any sequence of changes, commits, failed saves and crashes, reopen yields the last committed state', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(opArb, { maxLength: 40, size: 'max' }), async (ops) => {
      const fs = new MemoryLedgerFs();
      let ledger = await Ledger.open(new FileLedgerStore(PATH, fs), clock);
      let memory: Model = { attachments: new Map(), cooling: new Map() };
      let durable = copy(memory);

      for (const o of ops) {
        switch (o.op) {
          case 'put': {
            const a = attachment(o.id, o.ip);
            ledger.put(a);
            memory.attachments.set(attachmentKeyString(a.key), a);
            break;
          }
          case 'remove': {
            const key = attachment(o.id, 0).key;
            ledger.remove(key);
            memory.attachments.delete(attachmentKeyString(key));
            break;
          }
          case 'addCooling': {
            const ip = `10.0.1.${o.ip}`;
            ledger.addCooling(ip, 'eni-1', o.freedAt);
            memory.cooling.set(ip, { ip, eniId: 'eni-1', freedAt: o.freedAt });
            break;
          }
          case 'removeCooling':
            ledger.removeCooling(`10.0.1.${o.ip}`);
            memory.cooling.delete(`10.0.1.${o.ip}`);
            break;
          case 'commit':
            if (o.fail === undefined) {
              await ledger.commit();
              durable = copy(memory);
            } else {
              fs.failNext.push(o.fail);
              const before = fs.files.get(PATH);
              // A commit with nothing new does not write, so the injected failure may not fire.
              const ok = await ledger.commit().then(
                () => true,
                () => false,
              );
              if (ok) durable = copy(memory);
              else assert.equal(fs.files.get(PATH), before, 'a failed save leaves the old file');
              fs.failNext.length = 0;
            }
            break;
          case 'burst': {
            const commits = o.ids.map((id) => {
              const a = attachment(id, id + 100);
              ledger.put(a);
              memory.attachments.set(attachmentKeyString(a.key), a);
              return ledger.commit();
            });
            await Promise.all(commits);
            durable = copy(memory);
            break;
          }
          case 'crash':
            // The machine stops: what no fsync carried to the disk is gone.
            fs.crash();
            ledger = await Ledger.open(new FileLedgerStore(PATH, fs), clock);
            assertEquals(ledger, durable);
            memory = copy(durable);
            break;
        }
        assertFileParses(fs);
      }
      fs.crash();
      const reopened = await Ledger.open(new FileLedgerStore(PATH, fs), clock);
      assertEquals(reopened, durable);
    }),
    { numRuns: 300 },
  );
});
