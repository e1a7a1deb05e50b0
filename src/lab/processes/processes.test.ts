import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  describeProcess,
  isRecordedProcessAlive,
  readRecords,
  stopRecordedProcess,
  writeRecord,
} from './processes.ts';

test('a record matches its process only while start time and command line both match', () => {
  const me = describeProcess('self', process.pid, process.execPath);
  assert.equal(isRecordedProcessAlive(me), true);
  assert.equal(isRecordedProcessAlive({ ...me, startTime: '1' }), false, 'reused PID');
  assert.equal(isRecordedProcessAlive({ ...me, cmdlineMatch: 'no-such-program' }), false);
});

test('stopping a recorded process ends it, and a stale record stops nothing', async () => {
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  const rec = describeProcess('sleeper', child.pid!, 'sleep 30');
  const exited = new Promise((resolve) => child.once('exit', resolve));
  await stopRecordedProcess({ ...rec, startTime: '1' }, 100);
  assert.equal(isRecordedProcessAlive(rec), true);
  await stopRecordedProcess(rec, 2000);
  await exited;
  assert.equal(isRecordedProcessAlive(rec), false);
});

test('records round-trip through the pids dir and torn files are skipped', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-pids-'));
  try {
    const me = describeProcess('self', process.pid, process.execPath);
    await writeRecord(dir, me);
    await writeFile(join(dir, 'torn.json'), '{"role":"x","pid":');
    assert.deepEqual(await readRecords(dir), [me]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('overlapping writes of one record (lab up --detach and its supervisor) leave one whole record', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-pids-'));
  try {
    const me = describeProcess('supervisor', process.pid, process.execPath);
    const variants = Array.from({ length: 50 }, (_, i) => ({
      ...me,
      cmdlineMatch: 'x'.repeat(1 + ((i * 37) % 200)),
    }));
    await Promise.all(variants.map((v) => writeRecord(dir, v)));
    const records = await readRecords(dir);
    assert.equal(records.length, 1);
    assert.ok(variants.some((v) => JSON.stringify(v) === JSON.stringify(records[0])));
    assert.deepEqual(await readdir(dir), ['supervisor.json'], 'no temporary file is left');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
