// The journal file's durability: a commit answers only once its record is fdatasynced through the
// open journal, and a commit made during that fdatasync is carried by the next write, not this one.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Attachment } from '../../plan/attachment.ts';
import { Ledger } from '../ledger.ts';
import { MemoryLedgerFs } from '../testing/memory-fs.ts';
import type { AppendHandle } from './node-fs.ts';
import { FileLedgerStore, type JournalBound } from './store.ts';

const PATH = '/var/lib/vpcnet/ledger.json';
const JOURNAL = `${PATH}.journal`;
const NEVER_COMPACT: JournalBound = { minBytes: 1e12, snapshotFactor: 0 };

function attachment(n: number): Attachment {
  return {
    key: { network: 'vpcnet', containerId: `c${n}`, ifName: 'eth0' },
    pod: { namespace: 'default', name: `pod-${n}` },
    netns: `/var/run/netns/p${n}`,
    createdAt: 1000 + n,
    resources: [{ kind: 'vpcAddress', ip: `10.0.0.${n}`, eniId: 'eni-1' }],
  };
}

const open = (fs: MemoryLedgerFs) =>
  Ledger.open(new FileLedgerStore(PATH, fs, undefined, NEVER_COMPACT), { now: () => 42_000 });
const ids = (l: Ledger) => l.list().map((a) => a.key.containerId);

/** The memory fs with every journal fdatasync held until the test releases it. */
class HeldDatasyncFs extends MemoryLedgerFs {
  readonly held: (() => void)[] = [];

  override async openAppend(path: string): Promise<AppendHandle> {
    const h = await super.openAppend(path);
    return {
      append: (data) => h.append(data),
      syncData: async () => {
        await new Promise<void>((release) => this.held.push(release));
        await h.syncData();
      },
      close: () => h.close(),
    };
  }
}

/** How many fdatasyncs are held once the ledger has had a few turns to reach one. */
async function heldSyncs(fs: HeldDatasyncFs): Promise<number> {
  for (let i = 0; i < 5 && fs.held.length === 0; i++) await new Promise<void>((r) => setImmediate(r));
  return fs.held.length;
}

describe('ledger journal file', () => {
  test('a commit resolves only once its record is fdatasynced; one made meanwhile waits for the next write', async () => {
    const fs = new HeldDatasyncFs();
    const ledger = await open(fs);
    ledger.put(attachment(1));
    await ledger.commit();
    ledger.put(attachment(2));
    let first = false;
    const firstCommit = ledger.commit().then(() => {
      first = true;
    });
    assert.equal(await heldSyncs(fs), 1, 'the record is written and its fdatasync is in flight');
    assert.match(fs.files.get(JOURNAL) ?? '', /"c2"/);
    assert.equal(first, false, 'not durable yet: the commit must not resolve');
    // A change committed while that fdatasync runs is not carried by it: it gets a write of its own.
    ledger.put(attachment(3));
    let second = false;
    const secondCommit = ledger.commit().then(() => {
      second = true;
    });
    fs.held.shift()?.();
    await firstCommit;
    assert.equal(second, false);
    assert.equal(await heldSyncs(fs), 1, 'the next write carries the change made during the last fdatasync');
    fs.held.shift()?.();
    await secondCommit;
    fs.crash();
    assert.deepEqual(ids(await open(fs)), ['c1', 'c2', 'c3']);
  });
});
