import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { SPOOL_FILE_SUFFIX, SPOOL_TEMP_PREFIX, spoolFileName } from './format.ts';
import { spoolDel } from './write.ts';

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'vpcnet-spool-'));
}

const del = (id: string) => ({ env: { CNI_COMMAND: 'DEL', CNI_CONTAINERID: id }, stdin: '{}' });

test('a spooled DEL is one file holding the ForwardedRequest, private to root, with no temp left behind', () => {
  const dir = tempDir();
  try {
    const path = spoolDel(join(dir, 'spool'), del('a279'));
    assert.ok(path.endsWith(SPOOL_FILE_SUFFIX));
    assert.deepEqual(JSON.parse(readFileSync(path, 'utf8')), del('a279'));
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal(statSync(join(dir, 'spool')).mode & 0o777, 0o700);
    assert.deepEqual(
      readdirSync(join(dir, 'spool')).filter((n) => n.startsWith(SPOOL_TEMP_PREFIX)),
      [],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('DELs spooled one after another sort in arrival order', () => {
  const dir = tempDir();
  try {
    const ids = ['c1', 'c2', 'c3', 'c4', 'c5'];
    for (const id of ids) spoolDel(dir, del(id));
    const names = readdirSync(dir).sort();
    assert.equal(names.length, ids.length);
    const inOrder = names.map((n) => JSON.parse(readFileSync(join(dir, n), 'utf8')).env.CNI_CONTAINERID);
    assert.deepEqual(inOrder, ids);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('spool file names sort by time even when the numbers have different digit counts', () => {
  const earlier = spoolFileName(999, 5n, 99999, 'ffffffff');
  const later = spoolFileName(1000, 1n, 1, '00000000');
  assert.ok(earlier < later);
  const sameMs = [spoolFileName(1000, 99n, 7, 'aa'), spoolFileName(1000, 100n, 3, 'bb')];
  assert.deepEqual([...sameMs].sort(), sameMs, 'the monotonic clock orders DELs within one ms');
});

test('a spool dir that cannot be created makes spoolDel throw', () => {
  const dir = tempDir();
  try {
    writeFileSync(join(dir, 'file'), '');
    assert.throws(() => spoolDel(join(dir, 'file', 'spool'), del('x')), /ENOTDIR|EEXIST/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
