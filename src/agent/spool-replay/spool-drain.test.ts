import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { type ForwardedRequest, MAX_REQUEST_BYTES } from '../../cni/wire.ts';
import { silentLogger } from '../../infra/log.ts';
import { type DrainDeps, drainDelSpool } from './spool-drain.ts';

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

/** A handler that applies every DEL as the agent's does: records it and consumes its entry. */
function applying(seen: string[]): DrainDeps['handle'] {
  return async (req, guard) => {
    if (!(await guard.stillSpooled())) return { exitCode: 0, stdout: '' };
    seen.push(req.env.CNI_CONTAINERID ?? '');
    await guard.consume();
    return { exitCode: 0, stdout: '' };
  };
}

const zero = { replayed: 0, retrying: 0, failed: 0, rejected: 0, errors: 0 };

test('spooled DELs are replayed in arrival order and removed; half-written files are left alone', async () => {
  await withDir(async (dir) => {
    await writeFile(join(dir, fileName(2, 'b')), JSON.stringify(del('second')));
    await writeFile(join(dir, fileName(1, 'a')), JSON.stringify(del('first')));
    await writeFile(join(dir, `.tmp-${fileName(3, 'c')}`), JSON.stringify(del('half-written')));
    const seen: string[] = [];
    const result = await drainDelSpool(dir, { handle: applying(seen), log: silentLogger });
    assert.deepEqual(seen, ['first', 'second']);
    assert.deepEqual(result, { ...zero, replayed: 2 });
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
      log: silentLogger,
    });
    assert.deepEqual(result, { ...zero, retrying: 1, failed: 2 });
    assert.deepEqual((await readdir(dir)).sort(), [
      fileName(1, 'a'),
      `${fileName(2, 'b')}.failed`,
      `${fileName(3, 'c')}.failed`,
    ]);
    // The next drain applies the kept one once the cause has passed.
    const seen: string[] = [];
    assert.deepEqual(await drainDelSpool(dir, { handle: applying(seen), log: silentLogger }), {
      ...zero,
      replayed: 1,
    });
    assert.deepEqual(seen, ['busy']);
  });
});

test('odd entries (FIFO, dangling or outside symlink, directory, oversized file) are set aside unread while real DELs are applied', {
  timeout: 20_000,
}, async () => {
  await withDir(async (dir) => {
    const spool = join(dir, 'spool');
    await mkdir(spool);
    const outside = join(dir, 'outside.json');
    await writeFile(outside, JSON.stringify(del('read-through-a-link')));
    await writeFile(join(spool, fileName(1, 'a')), JSON.stringify(del('real-1')));
    execFileSync('mkfifo', [join(spool, fileName(2, 'fifo'))]);
    await writeFile(join(spool, fileName(3, 'b')), JSON.stringify(del('real-2')));
    await symlink(join(dir, 'nowhere'), join(spool, fileName(4, 'dangling')));
    await symlink(outside, join(spool, fileName(5, 'link')));
    await mkdir(join(spool, fileName(6, 'dir')));
    const huge = { ...del('huge'), stdin: `{"pad":"${'x'.repeat(MAX_REQUEST_BYTES)}"}` };
    await writeFile(join(spool, fileName(7, 'huge')), JSON.stringify(huge));
    await writeFile(join(spool, fileName(8, 'c')), JSON.stringify(del('real-3')));
    const seen: string[] = [];
    const result = await drainDelSpool(spool, { handle: applying(seen), log: silentLogger });
    assert.deepEqual(seen, ['real-1', 'real-2', 'real-3'], 'only the real DELs, none read through a link');
    assert.deepEqual(result, { ...zero, replayed: 3, rejected: 5 });
    assert.deepEqual(
      (await readdir(spool)).sort(),
      ['fifo', 'dangling', 'link', 'dir', 'huge']
        .map((tag, k) => `${fileName([2, 4, 5, 6, 7][k] ?? 0, tag)}.rejected`)
        .sort(),
    );
    // Set aside for good: the next drain reads none of them.
    assert.deepEqual(await drainDelSpool(spool, { handle: applying(seen), log: silentLogger }), zero);
  });
});

test('a handler that throws is counted and logged, and the DELs after it are still applied', async () => {
  await withDir(async (dir) => {
    for (const [k, id] of ['real-1', 'explodes', 'real-2'].entries())
      await writeFile(join(dir, fileName(k + 1, id)), JSON.stringify(del(id)));
    const seen: string[] = [];
    const apply = applying(seen);
    const result = await drainDelSpool(dir, {
      handle: async (req, guard) => {
        if (req.env.CNI_CONTAINERID === 'explodes') throw new Error('handler failed');
        return apply(req, guard);
      },
      log: silentLogger,
    });
    assert.deepEqual(seen, ['real-1', 'real-2']);
    assert.deepEqual(result, { ...zero, replayed: 2, errors: 1 });
    assert.deepEqual(await readdir(dir), [fileName(2, 'explodes')], 'kept for the next drain');
  });
});

test('an entry removed before its DEL holds the pod line is not applied (an ADD of its key applied it)', async () => {
  await withDir(async (dir) => {
    const path = join(dir, fileName(1, 'a'));
    await writeFile(path, JSON.stringify(del('reused')));
    const seen: string[] = [];
    const apply = applying(seen);
    const result = await drainDelSpool(dir, {
      handle: async (req, guard) => {
        await unlink(path); // what an ADD of this key does while the drain waits for the line
        return apply(req, guard);
      },
      log: silentLogger,
    });
    assert.deepEqual(seen, []);
    assert.equal(result.errors, 0);
  });
});

test('a missing spool dir means nothing to replay', async () => {
  const result = await drainDelSpool('/nonexistent/vpcnet-spool', {
    handle: applying([]),
    log: silentLogger,
  });
  assert.deepEqual(result, zero);
});
