import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { ForwardedRequest } from '../cni/wire.ts';
import { silentLogger } from './log.ts';
import { drainDelSpool } from './spool-drain.ts';

function del(containerId: string): ForwardedRequest {
  return { env: { CNI_COMMAND: 'DEL', CNI_CONTAINERID: containerId, CNI_IFNAME: 'eth0' }, stdin: '{}' };
}

test('spooled DELs are replayed in arrival order and removed', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-spool-'));
  try {
    await writeFile(join(dir, '0000000002-1-b.del.json'), JSON.stringify(del('second')));
    await writeFile(join(dir, '0000000001-1-a.del.json'), JSON.stringify(del('first')));
    await writeFile(join(dir, '.tmp-0000000003-1-c.del.json'), JSON.stringify(del('half-written')));
    const seen: string[] = [];
    const result = await drainDelSpool(
      dir,
      async (req) => {
        seen.push(req.env.CNI_CONTAINERID ?? '');
        return { exitCode: 0, stdout: '' };
      },
      silentLogger,
    );
    assert.deepEqual(seen, ['first', 'second']);
    assert.deepEqual(result, { replayed: 2, failed: 0 });
    assert.deepEqual(await readdir(dir), ['.tmp-0000000003-1-c.del.json']);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a spooled DEL that fails is kept as .failed, not dropped', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-spool-'));
  try {
    await writeFile(join(dir, '0000000001-1-a.del.json'), JSON.stringify(del('x')));
    await writeFile(join(dir, '0000000002-1-b.del.json'), 'not json');
    const result = await drainDelSpool(
      dir,
      async () => ({ exitCode: 1, stdout: '{"code":100}' }),
      silentLogger,
    );
    assert.deepEqual(result, { replayed: 0, failed: 2 });
    assert.deepEqual((await readdir(dir)).sort(), [
      '0000000001-1-a.del.json.failed',
      '0000000002-1-b.del.json.failed',
    ]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a missing spool dir means nothing to replay', async () => {
  const result = await drainDelSpool(
    '/nonexistent/vpcnet-spool',
    async () => ({ exitCode: 0, stdout: '' }),
    silentLogger,
  );
  assert.deepEqual(result, { replayed: 0, failed: 0 });
});
