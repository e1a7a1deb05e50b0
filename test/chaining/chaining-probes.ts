// What the chaining suite looks at from outside: a TCP listener inside a pod, a client in another
// namespace, the qdiscs and links of a namespace, its nat table, and whether the kernel can make ifb
// devices (the bandwidth plugin needs one for an egress limit). All inside namespaces of the suite.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { runProcess } from '../../src/infra/process.ts';
import { sh } from '../lab-fixture.ts';

export interface PodListener {
  /** Ends the listener (by its PID) and waits until it has exited. */
  close(): Promise<void>;
}

/** A node process inside `netns` that answers every TCP connection on `port` with `reply`. */
export async function listenInPod(netns: string, port: number, reply: string): Promise<PodListener> {
  const script = `const s = require('node:net').createServer((c) => c.end(${JSON.stringify(reply)}));
s.listen(${port}, '0.0.0.0', () => process.stdout.write('listening\\n'));`;
  // `ip netns exec` execs node in place, so the child's PID is the listener's.
  const child: ChildProcess = spawn('ip', ['netns', 'exec', netns, process.execPath, '-e', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = once(child, 'exit');
  let stderr = '';
  child.stderr?.on('data', (b: Buffer) => {
    stderr += b.toString('utf8');
  });
  const listening = new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (b: Buffer) => {
      if (b.toString('utf8').includes('listening')) resolve();
    });
    void exited.then(() => reject(new Error(`listener in ${netns} exited before listening: ${stderr}`)));
  });
  const close = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      process.kill(child.pid, 'SIGTERM');
      await exited;
    }
  };
  try {
    await listening;
  } catch (err) {
    await close();
    throw err;
  }
  return { close };
}

/** Connects from `netns` to ip:port and returns what the server sent before closing. */
export async function tcpFetch(netns: string, ip: string, port: number): Promise<string> {
  const script = `const c = require('node:net').connect(${port}, ${JSON.stringify(ip)});
let got = '';
c.setTimeout(5000, () => { console.error('no answer in 5 s'); process.exit(2); });
c.on('data', (d) => { got += d; });
c.on('end', () => { process.stdout.write(got); process.exit(0); });
c.on('error', (e) => { console.error(e.message); process.exit(1); });`;
  const out = await runProcess(['ip', 'netns', 'exec', netns, process.execPath, '-e', script], {
    timeoutMs: 15_000,
  });
  if (out.code !== 0) throw new Error(`${ip}:${port} from ${netns}: ${out.stderr.trim()}`);
  return out.stdout;
}

export interface Qdisc {
  readonly kind: string;
  readonly root?: boolean;
  readonly options?: { readonly rate?: number; readonly burst?: number };
}

/** `tc qdisc show dev DEV` inside `netns`; no device is an empty list. */
export async function qdiscs(netns: string, dev: string): Promise<Qdisc[]> {
  const out = await runProcess(['ip', 'netns', 'exec', netns, 'tc', '-j', 'qdisc', 'show', 'dev', dev]);
  if (out.code !== 0) return [];
  return JSON.parse(out.stdout || '[]') as Qdisc[];
}

export interface RedirectFilter {
  readonly to_dev?: string;
  readonly mirred_action?: string;
}

/** The mirred actions of the ingress filters on `dev`: where its incoming traffic is redirected. */
export async function ingressRedirects(netns: string, dev: string): Promise<RedirectFilter[]> {
  const out = await sh([
    'ip',
    'netns',
    'exec',
    netns,
    'tc',
    '-j',
    'filter',
    'show',
    'dev',
    dev,
    'parent',
    'ffff:',
  ]);
  const filters = JSON.parse(out || '[]') as {
    options?: { actions?: (RedirectFilter & { kind: string })[] };
  }[];
  return filters.flatMap((f) => f.options?.actions ?? []).filter((a) => a.kind === 'mirred');
}

export interface LinkInfo {
  readonly ifname: string;
  readonly mtu: number;
  readonly linkinfo?: { readonly info_kind?: string };
}

export async function links(netns: string): Promise<LinkInfo[]> {
  return JSON.parse(await sh(['ip', '-n', netns, '-j', '-d', 'link', 'show'])) as LinkInfo[];
}

export async function ipv4Address(netns: string, dev: string): Promise<string> {
  const out = JSON.parse(await sh(['ip', '-n', netns, '-j', '-4', 'addr', 'show', 'dev', dev])) as {
    addr_info: { local: string }[];
  }[];
  const ip = out[0]?.addr_info[0]?.local;
  if (ip === undefined) throw new Error(`${dev} in ${netns} has no IPv4 address`);
  return ip;
}

/** The nat table as iptables-save prints it, inside `netns`. */
export async function natRules(netns: string): Promise<string> {
  return sh(['ip', 'netns', 'exec', netns, 'iptables-save', '-t', 'nat']);
}

export async function sysctl(netns: string, key: string): Promise<string> {
  return (await sh(['ip', 'netns', 'exec', netns, 'sysctl', '-n', key])).trim();
}

/** Whether this kernel makes ifb devices: tried in a namespace made for the probe and removed after. */
export async function kernelHasIfb(scratchNetns: string): Promise<boolean> {
  await sh(['ip', 'netns', 'add', scratchNetns]);
  try {
    return (
      (await runProcess(['ip', '-n', scratchNetns, 'link', 'add', 'ifbprobe', 'type', 'ifb'])).code === 0
    );
  } finally {
    await sh(['ip', 'netns', 'del', scratchNetns]);
  }
}
