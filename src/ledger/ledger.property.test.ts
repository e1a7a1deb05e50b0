// Property: whatever the interleaving of changes, commits (some failing at a step of a journal
// append or a compaction), staged writes (written, not synced: several may be in flight at a
// crash), crashes between any two file operations of a commit, and torn writes at any byte of what
// was not yet synced (the rest cut off or read back as zeros), a reopened ledger equals the state
// of the last successful commit, or of a failed or staged write after it (which may have reached
// the disk): durable before success, never a change lost or applied twice, and never a torn append
// refused as damage. The store's files always load, and the lookups by address always agree with
// a scan of the records. (Damage to what was synced: journal-damage.property.test.ts.)

import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { type Attachment, attachmentKeyString } from '../plan/attachment.ts';
import type { CoolingAddress } from './format/snapshot.ts';
import { Ledger } from './ledger.ts';
import { FileLedgerStore, type JournalBound } from './storage/store.ts';
import { type LedgerFsStep, type LostWrites, MemoryLedgerFs } from './testing/memory-fs.ts';

const PATH = '/state/ledger.json';
const clock = { now: () => 1_000 };
const IPS = 21;

type Op =
  | { readonly op: 'put'; readonly id: number; readonly ip: number }
  | { readonly op: 'remove'; readonly id: number }
  | { readonly op: 'addCooling'; readonly ip: number; readonly freedAt: number }
  | { readonly op: 'removeCooling'; readonly ip: number }
  | { readonly op: 'commit'; readonly fail: LedgerFsStep | undefined }
  | { readonly op: 'burst'; readonly ids: readonly number[] }
  /** A change written and not synced (as an ADD's record of intent, Ledger.stage). */
  | { readonly op: 'stage'; readonly id: number }
  | { readonly op: 'crash'; readonly torn: number; readonly lost: LostWrites }
  /** The machine stops after `calls` file operations of the next commit (of a change to `id`). */
  | {
      readonly op: 'crashDuring';
      readonly id: number;
      readonly calls: number;
      readonly torn: number;
      readonly lost: LostWrites;
    };

const FAILING_STEPS: readonly LedgerFsStep[] = [
  'open',
  'write',
  'append',
  'fsync',
  'datasync',
  'rename',
  'syncDir',
];
/** How much of the unsynced data a crash keeps, as a fraction (a torn write at any byte). */
const tornArb = fc.double({ min: 0, max: 1, noNaN: true });
/** What becomes of the rest: cut off, or zeros (delayed allocation). */
const lostArb = fc.constantFrom<LostWrites>('cut', 'zeros');

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('put' as const), id: fc.nat(6), ip: fc.nat(IPS - 1) }),
  fc.record({ op: fc.constant('remove' as const), id: fc.nat(6) }),
  fc.record({ op: fc.constant('addCooling' as const), ip: fc.nat(IPS - 1), freedAt: fc.nat(10_000) }),
  fc.record({ op: fc.constant('removeCooling' as const), ip: fc.nat(IPS - 1) }),
  fc.record({
    op: fc.constant('commit' as const),
    fail: fc.constantFrom(undefined, undefined, undefined, ...FAILING_STEPS),
  }),
  fc.record({ op: fc.constant('burst' as const), ids: fc.array(fc.nat(6), { minLength: 1, maxLength: 4 }) }),
  fc.record({ op: fc.constant('stage' as const), id: fc.nat(6) }),
  fc.record({ op: fc.constant('crash' as const), torn: tornArb, lost: lostArb }),
  fc.record({
    op: fc.constant('crashDuring' as const),
    id: fc.nat(6),
    calls: fc.nat(9),
    torn: tornArb,
    lost: lostArb,
  }),
);

/** From compaction at every write to a journal that grows for long. */
const boundArb: fc.Arbitrary<JournalBound> = fc.record({
  minBytes: fc.constantFrom(0, 300, 1_500, 100_000),
  snapshotFactor: fc.constantFrom(0, 1, 4),
});

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

function sorted(ledger: Ledger): { attachments: Attachment[]; cooling: CoolingAddress[] } {
  const byKey = (a: Attachment, b: Attachment) =>
    attachmentKeyString(a.key).localeCompare(attachmentKeyString(b.key));
  const byIp = (a: CoolingAddress, b: CoolingAddress) => a.ip.localeCompare(b.ip);
  return { attachments: ledger.list().sort(byKey), cooling: ledger.coolingAddresses().sort(byIp) };
}

function modelSorted(m: Model): { attachments: Attachment[]; cooling: CoolingAddress[] } {
  const byKey = (a: Attachment, b: Attachment) =>
    attachmentKeyString(a.key).localeCompare(attachmentKeyString(b.key));
  const byIp = (a: CoolingAddress, b: CoolingAddress) => a.ip.localeCompare(b.ip);
  return {
    attachments: [...m.attachments.values()].sort(byKey),
    cooling: [...m.cooling.values()].sort(byIp),
  };
}

/** Which of the states the disk may hold the reopened ledger has (it must have one of them). */
function matching(ledger: Ledger, candidates: readonly Model[]): Model {
  const got = sorted(ledger);
  const found = candidates.find((m) => {
    try {
      assert.deepEqual(got, modelSorted(m));
      return true;
    } catch {
      return false;
    }
  });
  assert.ok(
    found,
    `reopened ${JSON.stringify(got)}; expected one of ${JSON.stringify(candidates.map(modelSorted))}`,
  );
  return copy(found);
}

/** The indexed lookups agree with a scan of every record. */
function assertLookups(ledger: Ledger): void {
  for (let i = 0; i < IPS + 110; i++) {
    const ip = `10.0.1.${i}`;
    const holds = (a: Attachment) => a.resources.some((r) => r.kind === 'vpcAddress' && r.ip === ip);
    const held = ledger.list().some(holds);
    const found = ledger.findByIp(ip);
    assert.equal(found === undefined ? !held : holds(found) && ledger.get(found.key) === found, true, ip);
    assert.equal(ledger.addressInUse(ip), held, `addressInUse(${ip})`);
  }
}

test('after any sequence of changes, commits, failed writes, crashes in a commit and torn writes, reopen yields a committed state', async () => {
  await fc.assert(
    fc.asyncProperty(boundArb, fc.array(opArb, { maxLength: 40, size: 'max' }), async (bound, ops) => {
      const fs = new MemoryLedgerFs();
      const open = () => Ledger.open(new FileLedgerStore(PATH, fs, undefined, bound), clock);
      let ledger = await open();
      let memory: Model = { attachments: new Map(), cooling: new Map() };
      /** What the disk may hold: the last committed state, then the states of failed commits since. */
      let candidates: Model[] = [copy(memory)];
      const put = (a: Attachment) => {
        const key = attachmentKeyString(a.key);
        const [ip] = a.resources.map((r) => (r.kind === 'vpcAddress' ? r.ip : ''));
        // Ownership: the agent never gives one address to two attachments (a load refuses that).
        const twin = [...memory.attachments].some(
          ([k, b]) => k !== key && b.resources.some((r) => r.kind === 'vpcAddress' && r.ip === ip),
        );
        if (twin) return;
        ledger.put(a);
        memory.attachments.set(key, a);
      };
      const reopen = async (torn: number, lost: LostWrites) => {
        fs.crash((_, unsynced) => torn * unsynced, lost);
        ledger = await open();
        memory = matching(ledger, candidates);
        candidates = [copy(memory)];
      };

      for (const o of ops) {
        switch (o.op) {
          case 'put':
            put(attachment(o.id, o.ip));
            break;
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
          case 'commit': {
            if (o.fail !== undefined) fs.failNext.push(o.fail);
            // A commit with nothing new does not write, and a write may not reach the failing step.
            const ok = await ledger.commit().then(
              () => true,
              () => false,
            );
            fs.failNext.length = 0;
            if (ok) candidates = [copy(memory)];
            else candidates.push(copy(memory));
            break;
          }
          case 'burst': {
            const commits = o.ids.map((id) => {
              put(attachment(id, id + 100));
              return ledger.commit();
            });
            await Promise.all(commits);
            candidates = [copy(memory)];
            break;
          }
          case 'stage':
            put(attachment(o.id, o.id + 70));
            // Written, not synced (or failed): on the disk after a crash, or not.
            await ledger.stage().catch(() => undefined);
            candidates.push(copy(memory));
            break;
          case 'crash':
            await reopen(o.torn, o.lost);
            break;
          case 'crashDuring': {
            put(attachment(o.id, o.id + 50));
            fs.haltAfter(o.calls);
            const ok = await ledger.commit().then(
              () => true,
              () => false,
            );
            if (ok) candidates = [copy(memory)];
            else candidates.push(copy(memory));
            await reopen(o.torn, o.lost);
            break;
          }
        }
        assertLookups(ledger);
        // The files as they are now always load (a torn tail is cut, never a refusal).
        await new FileLedgerStore(PATH, fs, undefined, bound).load();
      }
      await reopen(0.5, 'zeros');
    }),
    { numRuns: 300 },
  );
});
