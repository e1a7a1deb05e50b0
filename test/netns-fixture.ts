// Network namespaces for integration suites: uniquely named, always removed. Everything a suite
// does to the kernel happens inside namespaces it created here, never in the root namespace.
import { randomBytes } from 'node:crypto';
import { errorText } from '../src/infra/error-text.ts';
import { CommandFailed, type ProcessResult, runProcess, runToSuccess } from '../src/infra/process.ts';

export type ExecResult = ProcessResult;

const NAME = /^[A-Za-z0-9_.-]+$/;

export function netnsPath(name: string): string {
  return `/var/run/netns/${name}`;
}

/** Creates `<prefix><12 hex>` with its loopback up; returns the name. */
export async function createNetns(prefix: string): Promise<string> {
  const name = `${prefix}${randomBytes(6).toString('hex')}`;
  if (!NAME.test(name)) throw new Error(`invalid netns name ${JSON.stringify(name)}`);
  await runToSuccess(['ip', 'netns', 'add', name]);
  try {
    await runToSuccess(['ip', '-n', name, 'link', 'set', 'lo', 'up']);
  } catch (err) {
    await removeNetns(name);
    throw err;
  }
  return name;
}

/** Removes the namespace; one that is already gone is fine. */
export async function removeNetns(name: string): Promise<void> {
  if (!NAME.test(name)) throw new Error(`invalid netns name ${JSON.stringify(name)}`);
  const argv = ['ip', 'netns', 'del', name];
  const r = await runProcess(argv);
  if (r.code !== 0 && !/No such file or directory/.test(r.stderr)) throw new CommandFailed(argv, r);
}

/** Runs argv inside the namespace (`ip netns exec`); never throws on a non-zero exit. */
export function execIn(ns: string, argv: readonly string[], stdin?: string): Promise<ExecResult> {
  return runProcess(['ip', 'netns', 'exec', ns, ...argv], { stdin });
}

/** Like execIn, but a non-zero exit is an error naming the command and its stderr. */
export function mustExecIn(ns: string, argv: readonly string[], stdin?: string): Promise<ExecResult> {
  return runToSuccess(['ip', 'netns', 'exec', ns, ...argv], { stdin });
}

/** Namespaces created through it are removed by removeAll (for a suite's `after` hook). */
export interface NetnsTracker {
  create(prefix: string): Promise<string>;
  removeAll(): Promise<void>;
}

export function netnsTracker(): NetnsTracker {
  const names = new Set<string>();
  return {
    async create(prefix) {
      const name = await createNetns(prefix);
      names.add(name);
      return name;
    },
    async removeAll() {
      const failures: string[] = [];
      for (const name of [...names].reverse()) {
        try {
          await removeNetns(name);
          names.delete(name);
        } catch (err) {
          failures.push(errorText(err));
        }
      }
      if (failures.length > 0) throw new Error(failures.join('; '));
    },
  };
}

/** Runs fn with a namespace creator; every namespace it created is removed afterwards, also on failure. */
export async function withNetnsCleanup<T>(
  fn: (create: (prefix: string) => Promise<string>) => Promise<T>,
): Promise<T> {
  const tracker = netnsTracker();
  try {
    return await fn((prefix) => tracker.create(prefix));
  } finally {
    await tracker.removeAll();
  }
}

/** Plants a link carrying `mac` in `ns`, as the VPC fabric does when an ENI is attached (a veth whose peer is up). */
export async function plantEniLink(ns: string, name: string, mac: string): Promise<void> {
  await mustExecIn(ns, [
    'ip',
    'link',
    'add',
    name,
    'address',
    mac,
    'type',
    'veth',
    'peer',
    'name',
    `${name}p`,
  ]);
  await mustExecIn(ns, ['ip', 'link', 'set', `${name}p`, 'up']);
}

/** Why this kernel cannot make an 802.1q VLAN device on a veth (its own words), or undefined when it can. */
export function vlanRefusal(): Promise<string | undefined> {
  return withNetnsCleanup(async (create) => {
    const ns = await create('vpclq-');
    await mustExecIn(ns, ['ip', 'link', 'add', 'p0', 'type', 'veth', 'peer', 'name', 'p1']);
    const r = await execIn(ns, [
      'ip',
      'link',
      'add',
      'link',
      'p0',
      'name',
      'p0.7',
      'type',
      'vlan',
      'id',
      '7',
    ]);
    return r.code === 0 ? undefined : r.stderr.trim() || `ip exited ${r.code}`;
  });
}
