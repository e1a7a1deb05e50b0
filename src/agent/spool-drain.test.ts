import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { ForwardedRequest, ForwardedResponse } from '../cni/wire.ts';
import { silentLogger } from '../infra/log.ts';
import { drainDelSpool, spooledAt } from './spool-drain.ts';

function del(containerId: string): ForwardedRequest {
  return { env: { CNI_COMMAND: 'DEL', CNI_CONTAINERID: containerId, CNI_IFNAME: 'eth0' }, stdin: '{}' };
}

function fileName(ms: number, tag: string): string {
  return `${String(ms).padStart(15, '0')}-${'1'.padStart(20, '0')}-1-${tag}.del.json`;
}

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-spool-'));
  try {
    await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const ok = async (): Promise<ForwardedResponse> => ({ exitCode: 0, stdout: '' });
const never = () => false;

test('spooled DELs are replayed in arrival order and removed; half-written files are left alone', async () => {
  await withDir(async (dir) => {
    await writeFile(join(dir, fileName(2, 'b')), JSON.stringify(del('second')));
    await writeFile(join(dir, fileName(1, 'a')), JSON.stringify(del('first')));
    await writeFile(join(dir, `.tmp-${fileName(3, 'c')}`), JSON.stringify(del('half-written')));
    const seen: string[] = [];
    const result = await drainDelSpool(dir, {
      handle: async (req) => {
        seen.push(req.env.CNI_CONTAINERID ?? '');
        return { exitCode: 0, stdout: '' };
      },
      isStale: never,
      log: silentLogger,
    });
    assert.deepEqual(seen, ['first', 'second']);
    assert.deepEqual(result, { replayed: 2, retrying: 0, failed: 0, stale: 0 });
    assert.deepEqual(await readdir(dir), [`.tmp-${fileName(3, 'c')}`]);
  });
});

test('a DEL that fails for a passing reason is kept for the next drain; an invalid one is kept as .failed', async () => {
  await withDir(async (dir) => {
    await writeFile(join(dir, fileName(1, 'a')), JSON.stringify(del('busy')));
    await writeFile(join(dir, fileName(2, 'b')), JSON.stringify(del('bad')));
    await writeFile(join(dir, fileName(3, 'c')), 'not json');
    const result = await drainDelSpool(dir, {
      handle: async (req) =>
        req.env.CNI_CONTAINERID === 'busy'
          ? { exitCode: 1, stdout: '{"code":100,"msg":"kernel busy"}' }
          : { exitCode: 1, stdout: '{"code":4,"msg":"invalid"}' },
      isStale: never,
      log: silentLogger,
    });
    assert.deepEqual(result, { replayed: 0, retrying: 1, failed: 2, stale: 0 });
    assert.deepEqual((await readdir(dir)).sort(), [
      fileName(1, 'a'),
      `${fileName(2, 'b')}.failed`,
      `${fileName(3, 'c')}.failed`,
    ]);
    // The next drain applies the kept one once the cause has passed.
    assert.deepEqual(await drainDelSpool(dir, { handle: ok, isStale: never, log: silentLogger }), {
      replayed: 1,
      retrying: 0,
      failed: 0,
      stale: 0,
    });
  });
});

test('a spooled DEL older than the attachment it names is dropped, not applied', async () => {
  await withDir(async (dir) => {
    await writeFile(join(dir, fileName(1000, 'a')), JSON.stringify(del('reused')));
    let handled = 0;
    const result = await drainDelSpool(dir, {
      handle: async () => {
        handled++;
        return { exitCode: 0, stdout: '' };
      },
      isStale: (_req, at) => at === 1000,
      log: silentLogger,
    });
    assert.equal(handled, 0);
    assert.deepEqual(result, { replayed: 0, retrying: 0, failed: 0, stale: 1 });
    assert.deepEqual(await readdir(dir), []);
  });
});

test('spool file names carry the time they were spooled', () => {
  assert.equal(spooledAt(fileName(1764000000000, 'x')), 1764000000000);
  assert.equal(spooledAt('garbage.del.json'), undefined);
});

test('a missing spool dir means nothing to replay', async () => {
  const result = await drainDelSpool('/nonexistent/vpcnet-spool', {
    handle: ok,
    isStale: never,
    log: silentLogger,
  });
  assert.deepEqual(result, { replayed: 0, retrying: 0, failed: 0, stale: 0 });
});
