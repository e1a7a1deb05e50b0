// The lab node's agent as a process: its PID (from its own /v1/state), its memory (from /proc), and
// a restart the way the lab does one (SIGTERM by PID; the lab's supervisor starts a new agent, as a
// DaemonSet would), timed from the new process's start to its first answer.
import { readFile } from 'node:fs/promises';
import { runToSuccess } from '../src/infra/process.ts';
import { unixHttp } from '../src/lab/unix-http.ts';
import { agentState, type LabNodeDesc } from '../test/lab-fixture.ts';
import { sleep } from './stats.ts';

export async function agentPid(node: LabNodeDesc): Promise<number> {
  const pid = (await agentState(node)).pid;
  if (!Number.isInteger(pid) || pid <= 1)
    throw new Error(`agent of ${node.name} reports no PID in /v1/state`);
  return pid;
}

export interface ProcessMemory {
  readonly rssMiB: number;
  /** The peak RSS since the process started (VmHWM). */
  readonly peakMiB: number;
}

function statusKib(status: string, field: string, pid: number): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status);
  if (!m) throw new Error(`/proc/${pid}/status has no ${field} line`);
  return Number(m[1]);
}

export async function processMemory(pid: number): Promise<ProcessMemory> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return { rssMiB: statusKib(status, 'VmRSS', pid) / 1024, peakMiB: statusKib(status, 'VmHWM', pid) / 1024 };
}

let clockTicks: number | undefined;

/** Seconds since boot of `pid`'s start (field 22 of /proc/<pid>/stat, in clock ticks). */
async function startedAtUptime(pid: number): Promise<number> {
  clockTicks ??= Number((await runToSuccess(['getconf', 'CLK_TCK'])).stdout.trim());
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) start after the last ')'.
  const ticks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
  if (!Number.isFinite(ticks) || !(clockTicks > 0))
    throw new Error(`cannot read the start time of process ${pid}`);
  return ticks / clockTicks;
}

async function uptimeSeconds(): Promise<number> {
  return Number((await readFile('/proc/uptime', 'utf8')).split(' ')[0]);
}

export interface AgentRestart {
  readonly oldPid: number;
  readonly newPid: number;
  /** From the new process's start to its first healthy answer; /proc's clock ticks (10 ms) bound the precision. */
  readonly startToServingMs: number;
  /** From SIGTERM to the first answer of the new agent: shutdown and the supervisor's restart delay included. */
  readonly signalToServingMs: number;
}

async function healthy(node: LabNodeDesc): Promise<boolean> {
  const res = await unixHttp(node.agentSocket, 'GET', '/v1/healthz', undefined, 2000).catch(() => undefined);
  return res?.status === 200;
}

/** SIGTERM to the agent; waits (up to `timeoutMs`) until the supervisor's new agent answers. */
export async function restartAgent(node: LabNodeDesc, timeoutMs = 90_000): Promise<AgentRestart> {
  const oldPid = await agentPid(node);
  // Signal only the process the lab started as this node's agent, never a PID reused meanwhile.
  const cmdline = (await readFile(`/proc/${oldPid}/cmdline`, 'utf8').catch(() => '')).split('\0');
  if (!cmdline.some((arg) => arg.endsWith('/vpcnetd'))) {
    throw new Error(`PID ${oldPid}, which the agent of ${node.name} reports as its own, is not a vpcnetd`);
  }
  const signalled = performance.now();
  process.kill(oldPid, 'SIGTERM');
  while (performance.now() - signalled < timeoutMs) {
    if (await healthy(node)) {
      const answeredAt = await uptimeSeconds();
      const signalToServingMs = performance.now() - signalled;
      const newPid = await agentPid(node).catch(() => oldPid);
      if (newPid !== oldPid) {
        const startToServingMs = (answeredAt - (await startedAtUptime(newPid))) * 1000;
        return { oldPid, newPid, startToServingMs, signalToServingMs };
      }
    }
    await sleep(3);
  }
  throw new Error(`agent of ${node.name} (PID ${oldPid} stopped) did not serve again within ${timeoutMs} ms`);
}

/** CPU time (user + system) a process's threads used, and its main thread's alone, in ms (10 ms ticks). */
export interface CpuTime {
  readonly processMs: number;
  readonly mainThreadMs: number;
}

async function statCpuTicks(file: string): Promise<number> {
  const stat = await readFile(file, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime: fields 14 and 15 of stat(5), 12 and 13 after the command name.
  const ticks = Number(fields[11]) + Number(fields[12]);
  if (!Number.isFinite(ticks)) throw new Error(`cannot read CPU times from ${file}`);
  return ticks;
}

export async function cpuTime(pid: number): Promise<CpuTime> {
  clockTicks ??= Number((await runToSuccess(['getconf', 'CLK_TCK'])).stdout.trim());
  const ms = (ticks: number) => (ticks / (clockTicks ?? 100)) * 1000;
  return {
    processMs: ms(await statCpuTicks(`/proc/${pid}/stat`)),
    mainThreadMs: ms(await statCpuTicks(`/proc/${pid}/task/${pid}/stat`)),
  };
}
