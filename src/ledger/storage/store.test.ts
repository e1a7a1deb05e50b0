import assert from 'node:assert/strict';
import { fdatasyncSync, writeFileSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as os from 'node:os';
import * as nodePath from 'node:path';
import { describe, test } from 'node:test';
import type { Attachment } from '../../plan/attachment.ts';
import { NO_CHANGES } from '../changes.ts';
import { LEDGER_SCHEMA_VERSION, type LedgerSnapshot } from '../format/snapshot.ts';
import { loadRefusal } from '../testing/journal-fixtures.ts';
import { MemoryLedgerFs } from '../testing/memory-fs.ts';
import { MemoryLedgerStore } from '../testing/memory-store.ts';
import { type FsPromises, ledgerFsOn } from './node-fs.ts';
import { FileLedgerStore, LedgerLoadError, LedgerTooNewError } from './store.ts';

const PATH = '/var/lib/vpcnet/ledger.json';

function attachment(containerId: string, ip: string): Attachment {
  return {
    key: { network: 'vpcnet', containerId, ifName: 'eth0' },
    pod: { namespace: 'default', name: `pod-${containerId}` },
    netns: `/var/run/netns/${containerId}`,
    createdAt: 1000,
    resources: [
      { kind: 'vpcAddress', ip, eniId: 'eni-1' },
      {
        kind: 'veth',
        hostName: `vpc${containerId}`,
        hostMac: '02:00:00:00:00:01',
        podIfName: 'eth0',
        mtu: 9001,
      },
      { kind: 'rule', priority: 512, to: `${ip}/32`, table: 254 },
    ],
  };
}

function snapshot(...attachments: Attachment[]): LedgerSnapshot {
  return {
    schemaVersion: LEDGER_SCHEMA_VERSION,
    attachments,
    cooling: [{ ip: '10.0.0.9', eniId: 'eni-1', freedAt: 500 }],
    bindings: [],
    pendingEnis: [],
  };
}

describe('FileLedgerStore', () => {
  test('a missing file loads as a fresh start', async () => {
    assert.equal(await new FileLedgerStore(PATH, new MemoryLedgerFs()).load(), undefined);
  });

  test('a saved snapshot loads back equal', async () => {
    const fs = new MemoryLedgerFs();
    const snap = snapshot(attachment('a', '10.0.0.1'), attachment('b', '10.0.0.2'));
    await new FileLedgerStore(PATH, fs).save(snap);
    assert.deepEqual(await new FileLedgerStore(PATH, fs).load(), snap);
  });

  test('save writes a temp file in the same directory, renames it, fsyncs the directory, then starts a journal the same way', async () => {
    const fs = new MemoryLedgerFs();
    await new FileLedgerStore(PATH, fs, () => 'x').save(snapshot());
    const compaction = [
      `write ${PATH}.tmp-x`,
      `fsync ${PATH}.tmp-x`,
      `rename ${PATH}.tmp-x ${PATH}`,
      'syncDir /var/lib/vpcnet',
      `write ${PATH}.tmp-x`,
      `fsync ${PATH}.tmp-x`,
      `rename ${PATH}.tmp-x ${PATH}.journal`,
      'syncDir /var/lib/vpcnet',
    ];
    // Which journal the new one replaces, for the snapshot to name: none here, so a second
    // snapshot follows that names the first one's journal (a lost journal is then noticed).
    assert.deepEqual(fs.calls, [`read ${PATH}.journal`, ...compaction, ...compaction]);
    assert.equal(JSON.parse(fs.files.get(PATH) ?? '').schemaVersion, LEDGER_SCHEMA_VERSION);
  });

  test('a saved snapshot survives a crash right after save resolves (file and directory were fsynced)', async () => {
    const fs = new MemoryLedgerFs();
    const snap = snapshot(attachment('a', '10.0.0.1'));
    await new FileLedgerStore(PATH, fs).save(snap);
    fs.crash();
    assert.deepEqual(await new FileLedgerStore(PATH, fs).load(), snap);
  });

  test('the crash model loses what was not fsynced: unsynced contents, unsynced renames', async () => {
    const fs = new MemoryLedgerFs();
    const old = snapshot(attachment('a', '10.0.0.1'));
    await new FileLedgerStore(PATH, fs).save(old);
    // A save that skipped the directory fsync: the rename is lost in a crash.
    await fs.writeFile(`${PATH}.tmp`, JSON.stringify(snapshot()));
    await fs.syncFile(`${PATH}.tmp`);
    await fs.rename(`${PATH}.tmp`, PATH);
    fs.crash();
    assert.deepEqual(await new FileLedgerStore(PATH, fs).load(), old);
    // A save that skipped the file fsync: the new name survives but points at an empty file.
    await fs.writeFile(`${PATH}.tmp`, JSON.stringify(snapshot()));
    await fs.rename(`${PATH}.tmp`, PATH);
    await fs.syncDir('/var/lib/vpcnet');
    fs.crash();
    assert.equal(fs.files.get(PATH), '');
  });

  test('a crash between write and rename leaves the old snapshot', async () => {
    const fs = new MemoryLedgerFs();
    const old = snapshot(attachment('a', '10.0.0.1'));
    await new FileLedgerStore(PATH, fs).save(old);
    fs.failNext.push('rename');
    await assert.rejects(new FileLedgerStore(PATH, fs).save(snapshot(attachment('b', '10.0.0.2'))));
    assert.deepEqual(await new FileLedgerStore(PATH, fs).load(), old);
  });

  test('an fsync failure of the temp file rejects save and leaves the old snapshot', async () => {
    const fs = new MemoryLedgerFs();
    const old = snapshot(attachment('a', '10.0.0.1'));
    await new FileLedgerStore(PATH, fs).save(old);
    fs.failNext.push('fsync');
    await assert.rejects(new FileLedgerStore(PATH, fs).save(snapshot()), /injected fsync failure/);
    assert.deepEqual(await new FileLedgerStore(PATH, fs).load(), old);
    assert.deepEqual(
      await fs.listDir('/var/lib/vpcnet'),
      ['ledger.json', 'ledger.json.journal'],
      'the torn temp file is cleaned up',
    );
  });

  test('an fsync failure of the directory rejects save', async () => {
    const fs = new MemoryLedgerFs();
    fs.failNext.push('syncDir');
    await assert.rejects(new FileLedgerStore(PATH, fs).save(snapshot()), /fsync of its directory failed/);
  });

  test('a file that is not JSON is refused with the file named', async () => {
    const fs = new MemoryLedgerFs();
    fs.files.set(PATH, '{"schemaVersion":1,"attach');
    const err = await loadRefusal(fs);
    assert.match(err.message, /ledger \/var\/lib\/vpcnet\/ledger\.json is not valid JSON/);
  });

  test('a future schema version is refused as a downgrade (not as damage), the file named', async () => {
    const fs = new MemoryLedgerFs();
    fs.files.set(PATH, JSON.stringify({ ...snapshot(), schemaVersion: LEDGER_SCHEMA_VERSION + 1 }));
    const err = await new FileLedgerStore(PATH, fs).load().then(
      () => assert.fail('loaded'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof LedgerTooNewError, `expected LedgerTooNewError, got ${String(err)}`);
    assert.ok(!(err instanceof LedgerLoadError), 'a newer ledger would be set aside as corrupt');
    assert.equal(err.schemaVersion, LEDGER_SCHEMA_VERSION + 1);
    assert.match(
      err.message,
      new RegExp(`ledger\\.json has schema ${LEDGER_SCHEMA_VERSION + 1}, written by a newer`),
    );
  });

  test('a corrupt field is refused with its path named', async () => {
    const fs = new MemoryLedgerFs();
    const bad = JSON.parse(
      JSON.stringify(snapshot(attachment('a', '10.0.0.1'), attachment('b', '10.0.0.2'))),
    );
    bad.attachments[1].resources[2].table = 'main';
    fs.files.set(PATH, JSON.stringify(bad));
    const err = await loadRefusal(fs);
    assert.equal(err.field, 'attachments[1].resources[2].table');
    assert.match(
      err.message,
      /ledger\.json.*attachments\[1\]\.resources\[2\]\.table: expected a non-negative integer/,
    );
  });

  test('a missing list is refused', async () => {
    const fs = new MemoryLedgerFs();
    fs.files.set(PATH, JSON.stringify({ schemaVersion: 2, attachments: [] }));
    assert.equal((await loadRefusal(fs)).field, 'cooling');
  });

  test('an attachment recorded twice is refused', async () => {
    const fs = new MemoryLedgerFs();
    fs.files.set(PATH, JSON.stringify(snapshot(attachment('a', '10.0.0.1'), attachment('a', '10.0.0.2'))));
    const err = await loadRefusal(fs);
    assert.equal(err.field, 'attachments[1].key');
    assert.match(err.message, /duplicate of attachments\[0\]/);
  });

  test('works on a real filesystem and leaves no temp file', async () => {
    const dir = await fsp.mkdtemp(nodePath.join(os.tmpdir(), 'vpcnet-ledger-'));
    try {
      const path = nodePath.join(dir, 'ledger.json');
      const snap = snapshot(attachment('a', '10.0.0.1'));
      assert.equal(await new FileLedgerStore(path).load(), undefined);
      await new FileLedgerStore(path).save(snap);
      assert.deepEqual(await new FileLedgerStore(path).load(), snap);
      assert.deepEqual((await fsp.readdir(dir)).sort(), ['ledger.json', 'ledger.json.journal']);
      assert.equal((await fsp.stat(path)).mode & 0o777, 0o600);
      assert.equal((await fsp.stat(`${path}.journal`)).mode & 0o777, 0o600);
    } finally {
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });
});

describe('FileLedgerStore temp files on a real filesystem', () => {
  async function inTempDir(use: (dir: string) => Promise<void>): Promise<void> {
    const dir = await fsp.mkdtemp(nodePath.join(os.tmpdir(), 'vpcnet-ledger-tmp-'));
    try {
      await use(dir);
    } finally {
      await fsp.rm(dir, { recursive: true, force: true });
    }
  }

  test('a symlink planted at the temp path is never written through, and the ledger is still saved', async () => {
    await inTempDir(async (dir) => {
      const path = nodePath.join(dir, 'ledger.json');
      const victim = nodePath.join(dir, 'victim');
      await fsp.writeFile(victim, 'precious\n');
      // Both the old fixed name and the exact name the next save will pick point at the victim.
      await fsp.symlink(victim, `${path}.tmp`);
      await fsp.symlink(victim, `${path}.tmp-first`);
      const names = ['first', 'second'];
      const store = new FileLedgerStore(path, undefined, () => names.shift() ?? 'later');
      const snap = snapshot(attachment('a', '10.0.0.1'));
      await store.save(snap);
      assert.equal(await fsp.readFile(victim, 'utf8'), 'precious\n');
      assert.deepEqual(await new FileLedgerStore(path).load(), snap);
      assert.equal((await fsp.lstat(path)).isFile(), true, 'the ledger is a regular file, not a link');
    });
  });

  test('opening removes temp files of interrupted saves (links themselves, never their targets)', async () => {
    await inTempDir(async (dir) => {
      const path = nodePath.join(dir, 'ledger.json');
      const victim = nodePath.join(dir, 'victim');
      await fsp.writeFile(victim, 'precious\n');
      await fsp.symlink(victim, `${path}.tmp`);
      await fsp.writeFile(`${path}.tmp-0123abcd`, '{"torn');
      assert.equal(await new FileLedgerStore(path).load(), undefined);
      assert.deepEqual((await fsp.readdir(dir)).sort(), ['victim']);
      assert.equal(await fsp.readFile(victim, 'utf8'), 'precious\n');
    });
  });

  test('a refused ledger is set aside under a timestamped name and kept', async () => {
    await inTempDir(async (dir) => {
      const path = nodePath.join(dir, 'ledger.json');
      await fsp.writeFile(path, '{"schemaVersion":2,"attach');
      const store = new FileLedgerStore(path);
      await assert.rejects(store.load(), LedgerLoadError);
      const aside = await store.setAside(Date.UTC(2026, 0, 2, 3, 4, 5));
      assert.equal(aside, `${path}.corrupt-2026-01-02T03-04-05.000Z`);
      assert.equal(await fsp.readFile(aside, 'utf8'), '{"schemaVersion":2,"attach');
      assert.equal(await store.load(), undefined, 'the next load is a missing ledger, not a refusal');
    });
  });
});

describe('MemoryLedgerStore', () => {
  test('a saved snapshot is isolated from later changes to the objects passed in', async () => {
    const store = new MemoryLedgerStore();
    const attachments = [attachment('a', '10.0.0.1')];
    await store.save({ schemaVersion: LEDGER_SCHEMA_VERSION, attachments, cooling: [], bindings: [] });
    attachments.push(attachment('b', '10.0.0.2'));
    assert.equal((await store.load())?.attachments.length, 1);
  });
});

describe('nodeLedgerFs', () => {
  test('a save reaches the disk: the temp file and then the directory are fsynced before save resolves', async () => {
    const dir = await fsp.mkdtemp(nodePath.join(os.tmpdir(), 'vpcnet-ledger-spy-'));
    const path = nodePath.join(dir, 'ledger.json');
    const events: string[] = [];
    const spied: FsPromises = {
      async open(p, flags, mode) {
        const h = await fsp.open(p, flags, mode);
        const name = nodePath.basename(p) || p;
        return {
          async writeFile(data, enc) {
            events.push(`write ${name}`);
            await h.writeFile(data, enc);
          },
          appendSync(data) {
            events.push(`write ${name}`);
            writeFileSync(h.fd, data);
          },
          async sync() {
            events.push(`fsync ${name}`);
            await h.sync();
          },
          async datasync() {
            events.push(`datasync ${name}`);
            await h.datasync();
          },
          datasyncSync() {
            events.push(`datasync ${name}`);
            fdatasyncSync(h.fd);
          },
          close: () => h.close(),
        };
      },
      readFile: (p, enc) => fsp.readFile(p, enc),
      readdir: (p) => fsp.readdir(p),
      unlink: (p) => fsp.unlink(p),
      async rename(from, to) {
        events.push(`rename ${nodePath.basename(from)} ${nodePath.basename(to)}`);
        await fsp.rename(from, to);
      },
    };
    try {
      const store = new FileLedgerStore(path, ledgerFsOn(spied), () => 'x');
      await store.save(snapshot(attachment('a', '10.0.0.1')));
      events.push('resolved');
      const compaction = [
        'write ledger.json.tmp-x',
        'fsync ledger.json.tmp-x',
        'rename ledger.json.tmp-x ledger.json',
        `fsync ${nodePath.basename(dir)}`,
        'write ledger.json.tmp-x',
        'fsync ledger.json.tmp-x',
        'rename ledger.json.tmp-x ledger.json.journal',
        `fsync ${nodePath.basename(dir)}`,
      ];
      // No journal was there: a second snapshot names the first one's (store.ts).
      assert.deepEqual(events, [...compaction, ...compaction, 'resolved']);
      assert.equal((await fsp.stat(path)).mode & 0o777, 0o600);
      // A commit: one record appended to the journal and fdatasynced, nothing else.
      events.length = 0;
      const b = attachment('b', '10.0.0.2');
      await store.saveChanges({ ...NO_CHANGES, attachments: { put: [b], removed: [] } }, () => {
        throw new Error('a commit with an open journal does not need the whole state');
      });
      events.push('resolved');
      assert.deepEqual(events, ['write ledger.json.journal', 'datasync ledger.json.journal', 'resolved']);
      assert.deepEqual(
        (await new FileLedgerStore(path).load())?.attachments.map((a) => a.key.containerId),
        ['a', 'b'],
      );
    } finally {
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });
});
