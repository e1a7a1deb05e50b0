// `lab down`: removes every process, namespace and file of a lab. Idempotent, and works after a
// crash: processes are found through their PID records, namespaces by the lab's name prefix
// (also those of an earlier run whose state dir is gone).
import { rm, stat } from 'node:fs/promises';
import { removeRecordedContainers } from './agent-container.ts';
import { checkLabName, labLayout } from './layout.ts';
import { deleteNetns, labNetnsNames } from './netns.ts';
import { isRecordedProcessAlive, type ProcessRecord, readRecords, stopRecordedProcess } from './processes.ts';
import { labTimeout } from './timeouts.ts';

export interface LabDownOptions {
  /** Keep the state dir (its logs and error file); the lab's processes and namespaces still go. */
  readonly keepStateDir?: boolean;
  readonly log?: (line: Record<string, unknown>) => void;
}

const SUPERVISOR_GRACE_MS = 20_000;
const CHILD_GRACE_MS = 5_000;

/** What `lab down` removed (nothing at all, when the lab was not there). */
export interface LabRemoved {
  readonly processes: number;
  readonly namespaces: readonly string[];
  /** The state dir, when there was one and it went. */
  readonly stateDir?: string;
}

export async function labDown(name: string, opts: LabDownOptions = {}): Promise<LabRemoved> {
  checkLabName(name);
  const layout = labLayout(name, 0);
  const log = opts.log ?? (() => undefined);
  // Never this process: the supervisor tears its own lab down through here.
  const others = (await readRecords(layout.files.pidsDir)).filter((r) => r.pid !== process.pid);
  // What there is to remove, counted first: the supervisor removes most of it itself once stopped.
  const aliveAtStart = others.filter(isRecordedProcessAlive);
  const namespacesAtStart = await labNetnsNames(name);
  const hadStateDir = await stat(layout.stateDir).then(
    () => true,
    () => false,
  );
  // The supervisor first, so that it restarts nothing while its children are being stopped.
  await stopAll(
    others.filter((r) => r.role === 'supervisor'),
    labTimeout(SUPERVISOR_GRACE_MS),
    log,
  );
  await stopAll(
    others.filter((r) => r.role !== 'supervisor'),
    labTimeout(CHILD_GRACE_MS),
    log,
  );
  // The podman clients are gone; an agent container whose client was killed is not.
  await removeRecordedContainers(layout, log);
  const namespaces = await labNetnsNames(name);
  if (namespaces.length > 0) {
    await deleteNetns(namespaces);
    log({ msg: 'deleted network namespaces', lab: name, namespaces });
  }
  if (opts.keepStateDir !== true) await rm(layout.stateDir, { recursive: true, force: true });
  return {
    processes: aliveAtStart.filter((r) => !isRecordedProcessAlive(r)).length,
    namespaces: [...new Set([...namespacesAtStart, ...namespaces])],
    ...(hadStateDir && opts.keepStateDir !== true ? { stateDir: layout.stateDir } : {}),
  };
}

async function stopAll(
  records: readonly ProcessRecord[],
  graceMs: number,
  log: (line: Record<string, unknown>) => void,
): Promise<void> {
  await Promise.all(
    records.filter(isRecordedProcessAlive).map(async (r) => {
      await stopRecordedProcess(r, graceMs);
      log({ msg: 'stopped', role: r.role, pid: r.pid });
    }),
  );
}
