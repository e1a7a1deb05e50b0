// Preloaded into every test process that scripts/test.mjs starts (it names a lock file in
// VPCNET_TEST_TURN and runs two files at a time). A file under test/ uses the kernel (namespaces,
// labs, real clients, timing against the reference plugins), so it takes the turn alone: it waits
// until no other file runs and no other file starts until it ends. Unit files (src/, bench/) touch
// no kernel state and share the turn, two at a time; so do the test/ files scripts/test.mjs names in
// VPCNET_TEST_SHARED_TURN (labs that spend their time waiting, marked `// Test turn: shared`). The turn is an flock(1) held by a child that
// lives as long as this process: when the process ends, however it ends, the lock goes with it.
import { spawn } from 'node:child_process';
import type { Socket } from 'node:net';
import { relative, sep } from 'node:path';

const lockFile = process.env.VPCNET_TEST_TURN;
const file = process.argv.find((a) => a.endsWith('.test.ts'));

if (lockFile && file) {
  const path = relative(process.cwd(), file);
  const shared = (process.env.VPCNET_TEST_SHARED_TURN ?? '').split('\n').includes(path);
  const alone = path.startsWith(`test${sep}`) && !shared;
  const holder = spawn(
    'flock',
    [alone ? '--exclusive' : '--shared', lockFile, 'sh', '-c', 'echo held; exec cat'],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  await new Promise<void>((resolve, reject) => {
    holder.once('error', (err) => reject(new Error(`cannot take the test turn with flock: ${err.message}`)));
    holder.once('exit', (code) =>
      reject(new Error(`flock ${lockFile} ended (${code}) before the turn was held`)),
    );
    holder.stdout.once('data', () => resolve());
  });
  holder.removeAllListeners('exit');
  holder.removeAllListeners('error');
  holder.stdout.destroy();
  // Kept open and unreferenced: the pipe closes when this process ends, cat ends, and flock lets go.
  (holder.stdin as unknown as Socket).unref();
  holder.unref();
}
