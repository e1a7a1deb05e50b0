// What a support bundle collects, one collector per kind of evidence (as upstream's
// aws-cni-support.sh gathers them). Each writes files under the bundle's directory through
// `BundleWriter`; a collector's failure is recorded by the caller and never stops the others.
// Secrets: nothing here reads the environment or credentials files, and the writer redacts what
// is collected (support-bundle.ts).
import { execFile } from 'node:child_process';
import { lstat, readdir, readFile, stat } from 'node:fs/promises';
import { release } from 'node:os';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { getJson } from '../infra/unix-socket-json.ts';
import { VPCNET_VERSION } from '../infra/version.ts';
import { CONFLIST_NAME } from './install.ts';
import { parseNodeState } from './node-state.ts';
import { printer } from './output.ts';
import { expandGlob } from './path-glob.ts';
import { podsTable } from './pods.ts';
import { renderStatus, statusReport } from './status.ts';

const run = promisify(execFile);

export interface BundleSources {
  readonly agentSocket: string;
  readonly stateDir: string;
  readonly delSpoolDir: string;
  readonly cniConfDir: string;
  /**
   * The node's network namespace (a lab node's), entered for the node's dumps; absent: the one
   * this command runs in (on a node, the host's, where the agent's container shares it).
   */
  readonly nodeNetns?: string;
  readonly logGlobs: readonly string[];
  /** Whether the globs were asked for (else they are the defaults, and finding nothing is fine). */
  readonly logGlobsGiven: boolean;
  /** At most this many pod namespaces are dumped (a node may run hundreds of pods). */
  readonly maxPodNamespaces: number;
  readonly now: () => number;
}

export interface BundleWriter {
  /** Writes `name` (a path inside the bundle) with `content`. */
  write(name: string, content: string | Buffer): Promise<void>;
  /** Records that something could not be collected (errors.txt), without failing the bundle. */
  failed(what: string, why: string): void;
}

export interface Collector {
  readonly name: string;
  collect(src: BundleSources, w: BundleWriter): Promise<void>;
}

/** Files larger than this are cut to their last this-many bytes (logs grow without bound). */
const MAX_FILE_BYTES = 8 * 1024 * 1024;

async function readBounded(path: string): Promise<Buffer> {
  const content = await readFile(path);
  return content.length <= MAX_FILE_BYTES ? content : content.subarray(content.length - MAX_FILE_BYTES);
}

/** A command's stdout; a failing command throws with its stderr (recorded by the caller). */
async function output(file: string, args: readonly string[]): Promise<string> {
  const { stdout } = await run(file, args, { timeout: 15_000, maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

/** Regular files of `dir` (not descending), each with `keep` deciding by name. */
async function filesOf(dir: string, keep: (name: string) => boolean = () => true): Promise<string[]> {
  const names = (await readdir(dir)).filter(keep).sort();
  const files: string[] = [];
  for (const n of names) if ((await stat(join(dir, n))).isFile()) files.push(n);
  return files;
}

const agentState: Collector = {
  name: 'agent state',
  async collect(src, w) {
    const { status, body } = await getJson(src.agentSocket, '/v1/state');
    await w.write('agent/state.json', `${JSON.stringify(body, null, 2)}\n`);
    if (status !== 200) w.failed('agent state', `/v1/state answered ${status}`);
    const plain = printer(false);
    await w.write('agent/pods.txt', podsTable(parseNodeState(body).attachments, src.now(), plain));
  },
};

const agentStatus: Collector = {
  name: 'agent status',
  async collect(src, w) {
    const report = await statusReport(src.agentSocket, src.delSpoolDir, src.now());
    await w.write('agent/status.txt', renderStatus(report, printer(false)));
    await w.write('agent/status.json', `${JSON.stringify(report, null, 2)}\n`);
  },
};

const ledgerFiles: Collector = {
  name: 'ledger files',
  async collect(src, w) {
    for (const n of await filesOf(src.stateDir, (n) => n.startsWith('ledger')))
      await w.write(`ledger/${n}`, await readBounded(join(src.stateDir, n)));
  },
};

const delSpool: Collector = {
  name: 'DEL spool listing',
  async collect(src, w) {
    const lines: string[] = [];
    for (const n of (await readdir(src.delSpoolDir)).sort()) {
      const st = await stat(join(src.delSpoolDir, n)).catch(() => undefined);
      lines.push(`${n}\t${st?.size ?? '?'} bytes\t${st?.mtime.toISOString() ?? '?'}`);
    }
    await w.write('del-spool.txt', lines.length === 0 ? '(empty)\n' : `${lines.join('\n')}\n`);
  },
};

/**
 * vpcnet's own conflist only: the conf dir also holds other vendors' configs and kubeconfigs with
 * their tokens (Calico's, Multus'), which are not ours to hand over. Their names and sizes are
 * listed: which conflist sorts first decides what a runtime uses.
 */
const cniConf: Collector = {
  name: 'CNI conf dir',
  async collect(src, w) {
    const lines: string[] = [];
    let own = false;
    for (const n of (await readdir(src.cniConfDir)).sort()) {
      // lstat: a link is listed as one, never followed.
      const st = await lstat(join(src.cniConfDir, n)).catch(() => undefined);
      const kind = st === undefined ? '?' : st.isFile() ? 'file' : st.isSymbolicLink() ? 'link' : 'other';
      const mine = n === CONFLIST_NAME && kind === 'file';
      lines.push(`${n}\t${kind}\t${st?.size ?? '?'} bytes\t${mine ? 'collected' : 'not collected'}`);
      if (mine) {
        await w.write(`cni-conf/${n}`, await readBounded(join(src.cniConfDir, n)));
        own = true;
      }
    }
    await w.write('cni-conf-dir.txt', lines.length === 0 ? '(empty)\n' : `${lines.join('\n')}\n`);
    if (!own) w.failed('CNI conf dir', `no regular file ${CONFLIST_NAME} in ${src.cniConfDir}`);
  },
};

/** The node's namespace: what the dataplane built on the node side. */
const NODE_DUMPS: readonly [string, string, readonly string[]][] = [
  ['node/ip-link.json', 'ip', ['-j', '-d', 'link', 'show']],
  ['node/ip-addr.json', 'ip', ['-j', 'addr', 'show']],
  ['node/ip-route-all.json', 'ip', ['-j', 'route', 'show', 'table', 'all']],
  ['node/ip-rule.json', 'ip', ['-j', 'rule', 'show']],
  ['node/ip-neigh.json', 'ip', ['-j', 'neigh', 'show']],
  ['node/nft-ruleset.txt', 'nft', ['list', 'ruleset']],
];

const nodeDumps: Collector = {
  name: 'node network dumps',
  async collect(src, w) {
    for (const [name, file, args] of NODE_DUMPS) {
      const inNode =
        src.nodeNetns === undefined ? [file, ...args] : ['ip', 'netns', 'exec', src.nodeNetns, file, ...args];
      try {
        await w.write(name, await output(inNode[0] ?? file, inNode.slice(1)));
      } catch (err) {
        w.failed(`${file} ${args.join(' ')}`, err instanceof Error ? err.message : String(err));
      }
    }
  },
};

/** Each attached pod's namespace (from the agent's records), entered by path. */
const podDumps: Collector = {
  name: 'pod namespace dumps',
  async collect(src, w) {
    const { body } = await getJson(src.agentSocket, '/v1/state');
    const paths = [...new Set(parseNodeState(body).attachments.flatMap((a) => (a.netns ? [a.netns] : [])))];
    if (paths.length > src.maxPodNamespaces)
      w.failed(
        'pod namespace dumps',
        `${paths.length} namespaces, only the first ${src.maxPodNamespaces} dumped`,
      );
    for (const netns of paths.slice(0, src.maxPodNamespaces)) {
      const dir = `pods/${basename(netns).replace(/[^A-Za-z0-9_.-]/g, '_')}`;
      for (const [what, args] of [
        ['link', ['-d', 'link', 'show']],
        ['addr', ['-d', 'addr', 'show']],
        ['route', ['route', 'show', 'table', 'all']],
      ] as const) {
        try {
          await w.write(`${dir}/ip-${what}.txt`, await output('nsenter', [`--net=${netns}`, 'ip', ...args]));
        } catch (err) {
          w.failed(`ip ${what} in ${netns}`, err instanceof Error ? err.message : String(err));
        }
      }
    }
  },
};

const logs: Collector = {
  name: 'agent logs',
  async collect(src, w) {
    for (const pattern of src.logGlobs) {
      const files = await expandGlob(pattern);
      if (files.length === 0 && src.logGlobsGiven) w.failed('agent logs', `no file matches ${pattern}`);
      for (const f of files) await w.write(`logs${f}`, await readBounded(f));
    }
  },
};

const versions: Collector = {
  name: 'versions',
  async collect(src, w) {
    const tool = async (file: string, args: readonly string[]) =>
      (
        await output(file, args).catch(
          (err: unknown) => `(${err instanceof Error ? err.message : String(err)})`,
        )
      ).trim();
    const lines = [
      `vpcnetctl ${VPCNET_VERSION}`,
      `node ${process.version}`,
      `kernel ${release()}`,
      `uname ${await tool('uname', ['-a'])}`,
      `ip ${await tool('ip', ['-V'])}`,
      `nft ${await tool('nft', ['--version'])}`,
      `collected ${new Date(src.now()).toISOString()}`,
    ];
    await w.write('versions.txt', `${lines.join('\n')}\n`);
  },
};

export const COLLECTORS: readonly Collector[] = [
  versions,
  agentState,
  agentStatus,
  ledgerFiles,
  delSpool,
  cniConf,
  nodeDumps,
  podDumps,
  logs,
];
