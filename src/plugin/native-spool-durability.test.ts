// Durable before success (docs/design.md, rule 3) at the system-call level: the native forwarder,
// with no agent, spools a DEL and exits 0 only after the spool file is synced, renamed into place
// and the directory holding the new name is synced, in that order. Without the last sync a power
// cut can lose the rename, and with it a DEL the runtime was told had succeeded. Seen through
// strace, on the plugin built from this tree's sources (so the mutation check's copy is what runs).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { attachEnv, builtPlugins, netconf } from './testing/built-plugins.ts';

const run = promisify(execFile);
const { dir, nativeBin, execFileWithStdin } = builtPlugins();

const TRACED = 'openat,open,close,fsync,fdatasync,rename,renameat,renameat2';

/** Why strace cannot watch a process here (absent, or ptrace refused), or undefined when it can. */
async function straceMissing(): Promise<string | undefined> {
  try {
    await run('strace', ['-qq', '-o', '/dev/null', 'true']);
    return undefined;
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    return e.code === 'ENOENT'
      ? 'strace is not installed (apt-get install strace)'
      : `strace cannot trace here: ${e.stderr?.trim() ?? e.message}`;
  }
}

type SpoolEvent =
  | { readonly kind: 'sync'; readonly path: string }
  | { readonly kind: 'rename'; readonly from: string; readonly to: string };

/** The syncs (by the path their descriptor was opened with) and renames of an `strace -f` log. */
function syncsAndRenames(trace: string): SpoolEvent[] {
  const open = new Map<string, string>();
  const events: SpoolEvent[] = [];
  for (const raw of trace.split('\n')) {
    const line = raw.replace(/^\d+\s+/, ''); // the pid strace -f puts first
    const opened = /^open(?:at)?\((?:AT_FDCWD, )?"([^"]*)",.*\)\s*=\s*(\d+)/.exec(line);
    if (opened?.[1] !== undefined && opened[2] !== undefined) open.set(opened[2], opened[1]);
    const closed = /^close\((\d+)\)/.exec(line);
    if (closed?.[1] !== undefined) open.delete(closed[1]);
    const synced = /^f(?:data)?sync\((\d+)\)\s*=\s*0/.exec(line);
    const path = synced?.[1] === undefined ? undefined : open.get(synced[1]);
    if (path !== undefined) events.push({ kind: 'sync', path });
    const renamed = /^rename(?:at2?)?\((?:AT_FDCWD, )?"([^"]*)", (?:AT_FDCWD, )?"([^"]*)".*\)\s*=\s*0/.exec(
      line,
    );
    if (renamed?.[1] !== undefined && renamed[2] !== undefined)
      events.push({ kind: 'rename', from: renamed[1], to: renamed[2] });
  }
  return events;
}

test('a spooled DEL is fsynced, renamed into place, and its directory fsynced after the rename, before the plugin exits 0', async (t) => {
  const missing = await straceMissing();
  if (missing !== undefined) {
    // CI installs strace (scripts/setup.sh --with-real-clients): there, nothing may skip.
    if (process.env.CI === 'true' || process.env.CI === '1') assert.fail(missing);
    t.skip(missing);
    return;
  }
  const spool = join(dir, 'spool-synced');
  const log = join(dir, 'spool.strace');
  const out = await execFileWithStdin(
    ['strace', '-f', '-qq', '-o', log, '-e', `trace=${TRACED}`, nativeBin],
    { ...attachEnv, CNI_COMMAND: 'DEL' },
    netconf({ agentSocket: join(dir, 'absent.sock'), delSpoolDir: spool }),
  );
  assert.equal(out.code, 0, `the DEL was not spooled: ${out.stdout}`);
  const [name, ...others] = readdirSync(spool);
  assert.ok(name !== undefined && others.length === 0, 'one spool file');
  const final = join(spool, name);
  const events = syncsAndRenames(readFileSync(log, 'utf8'));
  const shown = JSON.stringify(events, null, 1);
  const renamed = events.findIndex((e) => e.kind === 'rename' && e.to === final);
  assert.ok(renamed >= 0, `no rename into ${final}:\n${shown}`);
  const rename = events[renamed];
  assert.ok(rename?.kind === 'rename' && rename.from !== final);
  const fileSynced = events.findIndex((e) => e.kind === 'sync' && e.path === rename.from);
  assert.ok(fileSynced >= 0 && fileSynced < renamed, `the file is synced before its rename:\n${shown}`);
  const dirSynced = events.findIndex((e, i) => i > renamed && e.kind === 'sync' && e.path === spool);
  assert.ok(dirSynced > renamed, `the spool directory is synced after the rename:\n${shown}`);
});
