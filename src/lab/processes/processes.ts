// The lab's processes, recorded by PID so that `lab down` stops exactly them and nothing else.
// A record holds the process's start time (from /proc/<pid>/stat) and a piece of its command
// line: a reused PID never matches both, so a stale record can never kill a stranger.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ProcessRecord {
  readonly role: string;
  readonly pid: number;
  readonly startTime: string;
  /** Found in /proc/<pid>/cmdline (NUL bytes read as spaces) for as long as the process is ours. */
  readonly cmdlineMatch: string;
}

/** State (field 3) and start time (field 22) from /proc/<pid>/stat. */
function procStat(pid: number): { state: string; startTime: string } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const state = fields[0];
    const startTime = fields[19];
    return state === undefined || startTime === undefined ? undefined : { state, startTime };
  } catch {
    return undefined;
  }
}

function procCmdline(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return undefined;
  }
}

/** Is the recorded process still running (and still the one recorded)? */
export function isRecordedProcessAlive(rec: ProcessRecord): boolean {
  const stat = procStat(rec.pid);
  // A zombie is gone for our purposes (its parent has not reaped it yet).
  if (stat === undefined || stat.startTime !== rec.startTime || stat.state === 'Z') return false;
  const cmdline = procCmdline(rec.pid);
  return cmdline?.includes(rec.cmdlineMatch) === true;
}

export function describeProcess(role: string, pid: number, cmdlineMatch: string): ProcessRecord {
  const startTime = procStat(pid)?.startTime;
  if (startTime === undefined) throw new Error(`process ${pid} (${role}) is not running`);
  return { role, pid, startTime, cmdlineMatch };
}

/**
 * Atomic (temp file, then rename): `lab up --detach` and the supervisor it starts both record the
 * supervisor, and two overlapping writes of one file could leave a torn record that names no one.
 */
export async function writeRecord(pidsDir: string, rec: ProcessRecord): Promise<void> {
  await mkdir(pidsDir, { recursive: true });
  const file = join(pidsDir, `${rec.role}.json`);
  const tmp = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  await writeFile(tmp, `${JSON.stringify(rec)}\n`);
  await rename(tmp, file);
}

export async function readRecords(pidsDir: string): Promise<ProcessRecord[]> {
  const names = await readdir(pidsDir).catch(() => [] as string[]);
  const out: ProcessRecord[] = [];
  for (const n of names.filter((x) => x.endsWith('.json'))) {
    try {
      const v: unknown = JSON.parse(await readFile(join(pidsDir, n), 'utf8'));
      if (isRecord(v)) out.push(v);
    } catch {
      // A record torn by a crash mid-write names no process we could verify.
    }
  }
  return out;
}

function isRecord(v: unknown): v is ProcessRecord {
  if (typeof v !== 'object' || v === null) return false;
  const r = v as Record<string, unknown>;
  return (
    typeof r.role === 'string' &&
    typeof r.pid === 'number' &&
    Number.isInteger(r.pid) &&
    r.pid > 1 &&
    typeof r.startTime === 'string' &&
    typeof r.cmdlineMatch === 'string' &&
    r.cmdlineMatch !== ''
  );
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. Only if the record still matches. */
export async function stopRecordedProcess(rec: ProcessRecord, graceMs = 5000): Promise<void> {
  if (!isRecordedProcessAlive(rec)) return;
  signal(rec.pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!isRecordedProcessAlive(rec)) return;
    await sleep(50);
  }
  if (isRecordedProcessAlive(rec)) signal(rec.pid, 'SIGKILL');
  for (let i = 0; i < 100 && isRecordedProcessAlive(rec); i++) await sleep(20);
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // Already gone.
  }
}
