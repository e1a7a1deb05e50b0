// Holds every thread of libuv's pool busy while a test runs, to show that some work never waits for
// one: each thread blocks in open(2) of a FIFO that has no writer yet, until the test is done and
// the holder opens the FIFOs' write ends. Before the test runs, a stat through the pool must stay
// unanswered: proof that the pool really is held.

import { execFileSync } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import { mkdtemp, open, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** libuv's pool size: UV_THREADPOOL_SIZE when set, else its default of 4. */
function poolSize(): number {
  const n = Number(process.env.UV_THREADPOOL_SIZE);
  return Number.isInteger(n) && n > 0 ? n : 4;
}

function settlesWithin<T>(p: Promise<T>, ms: number): Promise<boolean> {
  return Promise.race([
    p.then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((r) => setTimeout(() => r(false), ms)),
  ]);
}

/** Runs `body` while no thread of libuv's pool is free; it must settle within `timeoutMs`. */
export async function whilePoolIsBusy<T>(body: () => Promise<T>, timeoutMs = 2000): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-busy-pool-'));
  const fifos = Array.from({ length: poolSize() }, (_, i) => join(dir, `fifo${i}`));
  for (const f of fifos) execFileSync('mkfifo', [f]);
  const holders = fifos.map((f) => open(f, 'r').then((h) => h.close()));
  const release = () => {
    for (const f of fifos) closeSync(openSync(f, constants.O_WRONLY | constants.O_NONBLOCK));
  };
  try {
    if (await settlesWithin(stat(dir), 100))
      throw new Error('the thread pool was not held: a stat got through');
    const result = body();
    if (!(await settlesWithin(result, timeoutMs)))
      throw new Error(
        `what ran while the pool was held did not finish within ${timeoutMs} ms: it waits for the pool`,
      );
    return await result;
  } finally {
    release();
    await Promise.all(holders);
    await rm(dir, { recursive: true, force: true });
  }
}
