// `lab up --detach`: starts the supervisor as a daemon (own session, output to a log file in the
// state dir), waits until it reports the lab ready (lab.json) or failed (error.json), and returns
// the lab's description. A failed start leaves nothing behind.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { type LabDescription, labLayout } from '../layout.ts';
import { labTimeout } from '../timeouts.ts';
import { parseTrunkDriver, type TrunkDriver } from '../trunk-driver.ts';
import { labDown } from '../verbs/down.ts';
import { assertLabAbsent, type LabLog, type LabUpOptions } from '../verbs/up.ts';
import { logTail } from './agents.ts';
import { ctlArgv } from './children.ts';
import { logFollower } from './log-follower.ts';
import { describeProcess, writeRecord } from './processes.ts';

/** What the detached supervisor is asked to build (the state dir's up-request.json). */
export interface UpRequest {
  readonly nodes: number;
  readonly instanceType: string;
  readonly podEni: boolean;
  /** Absent: probed when the lab is built. */
  readonly trunkDriver?: TrunkDriver;
  /** Absent: the agents run as host processes. */
  readonly agentImage?: string;
  /** Absent: an IPv4-only VPC. */
  readonly ipv6?: boolean;
}

const READY_TIMEOUT_MS = 180_000;

/** `onLog` (optional) sees each line the supervisor logs while the lab comes up: progress for a person. */
export async function labUpDetached(
  opts: Omit<LabUpOptions, 'log'>,
  onLog?: LabLog,
): Promise<LabDescription> {
  const layout = labLayout(opts.name, opts.nodes ?? 1, opts.ipv6 === true);
  await assertLabAbsent(opts.name);
  await mkdir(layout.files.pidsDir, { recursive: true, mode: 0o700 });
  const request: UpRequest = {
    nodes: opts.nodes ?? 1,
    instanceType: opts.instanceType ?? 't3.medium',
    podEni: opts.podEni === true,
    ...(opts.trunkDriver === undefined ? {} : { trunkDriver: opts.trunkDriver }),
    ...(opts.agentImage === undefined ? {} : { agentImage: opts.agentImage }),
    ...(opts.ipv6 === true ? { ipv6: true } : {}),
  };
  await writeFile(layout.files.upRequest, `${JSON.stringify(request)}\n`);
  const fd = openSync(layout.files.supervisorLog, 'a', 0o600);
  const [file, ...args] = ctlArgv(opts.repoRoot);
  let child: ReturnType<typeof spawn>;
  try {
    child = spawn(file, [...args, 'lab', 'supervise', '--name', opts.name], {
      cwd: opts.repoRoot,
      detached: true,
      stdio: ['ignore', fd, fd],
    });
  } finally {
    closeSync(fd);
  }
  child.on('error', () => undefined);
  if (child.pid !== undefined) {
    await writeRecord(
      layout.files.pidsDir,
      describeProcess('supervisor', child.pid, `supervise --name ${opts.name} `),
    );
  }
  child.unref();

  const readyMs = labTimeout(READY_TIMEOUT_MS);
  const deadline = Date.now() + readyMs;
  const follow = onLog === undefined ? undefined : logFollower(layout.files.supervisorLog, onLog);
  let failure: string | undefined;
  while (failure === undefined) {
    follow?.();
    if (existsSync(layout.files.description)) {
      follow?.();
      return JSON.parse(await readFile(layout.files.description, 'utf8')) as LabDescription;
    }
    if (existsSync(layout.files.error)) {
      const parsed = JSON.parse(await readFile(layout.files.error, 'utf8')) as { error?: unknown };
      failure = String(parsed.error);
    } else if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) {
      failure = `the supervisor exited (${child.exitCode ?? child.signalCode ?? 'did not start'})`;
    } else if (Date.now() > deadline) {
      failure = `the lab was not ready after ${readyMs / 1000} s`;
    } else {
      await sleep(100);
    }
  }
  const tail = await logTail(layout.files.supervisorLog);
  await labDown(opts.name);
  throw new Error(`lab up --name ${opts.name} failed: ${failure}\n${tail}`);
}

/** `lab supervise --name L`: the detached supervisor reads what to build from up-request.json. */
export async function readUpRequest(name: string): Promise<UpRequest> {
  const layout = labLayout(name, 0);
  const text = await readFile(layout.files.upRequest, 'utf8').catch(() => {
    throw new Error(
      `${layout.files.upRequest} is missing: \`lab supervise\` is started by \`lab up --detach\``,
    );
  });
  const v = JSON.parse(text) as Partial<Record<keyof UpRequest, unknown>>;
  if (typeof v.nodes !== 'number' || typeof v.instanceType !== 'string' || typeof v.podEni !== 'boolean') {
    throw new Error(`${layout.files.upRequest} is not a valid up request: ${text.trim()}`);
  }
  if (
    (v.trunkDriver !== undefined && typeof v.trunkDriver !== 'string') ||
    (v.agentImage !== undefined && typeof v.agentImage !== 'string')
  ) {
    throw new Error(`${layout.files.upRequest} is not a valid up request: ${text.trim()}`);
  }
  return {
    nodes: v.nodes,
    instanceType: v.instanceType,
    podEni: v.podEni,
    ...(v.trunkDriver === undefined ? {} : { trunkDriver: parseTrunkDriver(v.trunkDriver) }),
    ...(v.agentImage === undefined ? {} : { agentImage: v.agentImage }),
    ...(v.ipv6 === true ? { ipv6: true } : {}),
  };
}
