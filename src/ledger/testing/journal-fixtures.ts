// What the file store's journal tests share: a ledger on the crash model's file system, and
// attachments numbered so that a test can name what it expects back after a crash.
import assert from 'node:assert/strict';
import type { Attachment } from '../../plan/attachment.ts';
import { LEDGER_SCHEMA_VERSION, type LedgerSnapshot } from '../format/snapshot.ts';
import { Ledger } from '../ledger.ts';
import { FileLedgerStore, type JournalBound, LedgerLoadError } from '../storage/store.ts';
import type { MemoryLedgerFs } from './memory-fs.ts';

export const DIR = '/var/lib/vpcnet';
export const PATH = `${DIR}/ledger.json`;
export const JOURNAL = `${PATH}.journal`;
export const clock = { now: () => 42_000 };
export const NEVER_COMPACT: JournalBound = { minBytes: 1e12, snapshotFactor: 0 };

export function attachment(n: number, ip = `10.0.${n >> 8}.${n & 255}`): Attachment {
  return {
    key: { network: 'vpcnet', containerId: `c${n}`, ifName: 'eth0' },
    pod: { namespace: 'default', name: `pod-${n}`, uid: `uid-${n}` },
    netns: `/var/run/netns/p${n}`,
    createdAt: 1000 + n,
    resources: [
      { kind: 'vpcAddress', ip, eniId: 'eni-1' },
      { kind: 'veth', hostName: `vpc${n}`, hostMac: '02:00:00:00:00:01', podIfName: 'eth0', mtu: 9001 },
      { kind: 'rule', priority: 512, to: `${ip}/32`, table: 254 },
      { kind: 'snat', ip },
    ],
  };
}

export function snapshotOf(...attachments: Attachment[]): LedgerSnapshot {
  return { schemaVersion: LEDGER_SCHEMA_VERSION, attachments, cooling: [], bindings: [], pendingEnis: [] };
}

export async function open(fs: MemoryLedgerFs, bound: JournalBound = NEVER_COMPACT): Promise<Ledger> {
  return Ledger.open(new FileLedgerStore(PATH, fs, undefined, bound), clock);
}

/** Whether the calls since the test cleared them renamed a new snapshot into place. */
export const wroteSnapshot = (fs: MemoryLedgerFs) =>
  fs.calls.some((c) => c.startsWith('rename ') && c.endsWith(` ${PATH}`));

export const ids = (l: Ledger) => l.list().map((a) => a.key.containerId);

/** The LedgerLoadError a load of the ledger at PATH refuses with (the test fails if it loads). */
export async function loadRefusal(fs: MemoryLedgerFs): Promise<LedgerLoadError> {
  const err = await new FileLedgerStore(PATH, fs).load().then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(err instanceof LedgerLoadError, `expected LedgerLoadError, got ${String(err)}`);
  return err;
}
