// `vpcnetctl support-bundle`: one .tar.gz an operator attaches to a bug report. The collectors
// (bundle-collectors.ts) write into a private temporary directory, then Debian's tar packs it: tar
// is on every node and in the image (Essential in Debian), and a tar writer of our own would be
// code to keep correct for no gain. The bundle names every pod of the node and their addresses:
// it is its owner's alone from its first byte (opened here O_EXCL, mode 0600, and tar writes to
// that descriptor), and what goes in is redacted of anything token-like (secret-redaction.ts).
import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { type FileHandle, lstat, mkdir, mkdtemp, open, rm, unlink, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { dirname, join, normalize, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { errorText } from '../../infra/error-text.ts';
import type { CliEnv } from '../cli-env.ts';
import { CONFLIST_NAME } from '../install/install.ts';
import {
  DEFAULT_CNI_CONF_DIR,
  DEFAULT_STATE_DIR,
  NODE_TARGET_HELP,
  NODE_TARGET_OPTIONS,
  resolveNodeTarget,
} from '../node/node-target.ts';
import { EXIT_USAGE } from '../output.ts';
import { type BundleSources, COLLECTORS } from './bundle-collectors.ts';
import { REDACTED, redactSecretsInBytes } from './secret-redaction.ts';

export const DEFAULT_LOG_GLOBS = ['/var/log/pods/kube-system_vpcnet-*/*/*.log'];

export const SUPPORT_BUNDLE_HELP = `Usage: vpcnetctl support-bundle [-o FILE] [--agent-socket PATH] [--state-dir DIR]
         [--del-spool-dir DIR] [--cni-conf-dir DIR] [--logs GLOB ...] [--max-pod-namespaces N]
       vpcnetctl support-bundle [-o FILE] --lab NAME [--node N] [--logs GLOB ...]

Writes one .tar.gz for a bug report, readable by its owner only: FILE is created with mode 0600
before anything is written to it, and a FILE that exists already (a file, a link) is refused,
never overwritten or followed.

What it holds: the agent's state JSON, status and pods summaries, the ledger files (snapshot and
journal), the DEL spool listing (names and sizes, not contents), vpcnet's own conflist
(${CONFLIST_NAME}) and the names and sizes of the other files in the CNI conf dir (not their
contents: other plugins' configs and kubeconfigs stay on the node), 'ip -j' dumps (link, addr,
route table all, rule, neigh) and 'nft list ruleset' of the node's namespace (this one, or the lab
node's), 'ip' link, addr and route
inside each attached pod's namespace, the agent's logs, and versions. What cannot be collected is
listed in errors.txt.

What it leaves out: the environment, and credentials files. In everything it collects,
token-like values are replaced by ${REDACTED} (redactions.txt counts them per file): bearer
tokens and Authorization headers, fields named like token, secret, password, private or client
key (a kubeconfig's token, client-key-data, client-certificate-data), PEM private keys and
certificates, JWTs, AWS access key IDs and secret access keys, passwords in URLs.

  -o FILE          where to write (default /tmp/vpcnet-support-<host>-<time>.tar.gz)
${NODE_TARGET_HELP}
                       (a lab node's state, spool and CNI dirs, netns and agent log are the lab's)
  --state-dir      the agent's state dir (default ${DEFAULT_STATE_DIR}; the spool is DIR/del-spool)
  --del-spool-dir  the DEL spool, when not DIR/del-spool
  --cni-conf-dir   default ${DEFAULT_CNI_CONF_DIR}
  --logs GLOB      log files to include (repeatable; default ${DEFAULT_LOG_GLOBS.join(' ')}, if present)
  --max-pod-namespaces N
                   dump at most N pod namespaces (default 50)
`;

/** The output path exists: never overwritten, never followed (it may be a link planted in /tmp). */
export class BundleOutputExists extends Error {
  constructor(readonly path: string) {
    super(
      `${path} exists; a support bundle never overwrites or follows an existing path (choose another -o)`,
    );
  }
}

function stamp(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
}

/** Creates `path` for writing, 0600 from the start; refuses any existing path, a link included. */
async function createPrivate(path: string): Promise<FileHandle> {
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
  try {
    const handle = await open(path, flags, 0o600);
    // A umask can only narrow 0600; set it exactly, so the owner can read what it asked for.
    await handle.chmod(0o600);
    return handle;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new BundleOutputExists(path);
    throw err;
  }
}

/** A temporary directory only this user can enter (mkdtemp makes it 0700; a umask cannot widen it). */
async function privateWorkDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-support-'));
  const st = await lstat(dir);
  if (!st.isDirectory() || (st.mode & 0o077) !== 0 || st.uid !== process.getuid?.()) {
    await rm(dir, { recursive: true, force: true });
    throw new Error(`temporary directory ${dir} is not private (mode ${(st.mode & 0o7777).toString(8)})`);
  }
  return dir;
}

/** tar's gzipped archive of `dir/root` on `out`: tar never opens a path of its own to write. */
function tarInto(out: FileHandle, dir: string, root: string): Promise<void> {
  return new Promise((done, fail) => {
    const tar = spawn('tar', ['-czf', '-', '-C', dir, root], {
      stdio: ['ignore', out.fd, 'pipe'],
      timeout: 120_000,
    });
    let stderr = '';
    tar.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    tar.on('error', fail);
    tar.on('close', (code, signal) => {
      if (code === 0) done();
      else fail(new Error(`tar failed (${signal ?? `exit ${code}`}): ${stderr.trim()}`));
    });
  });
}

export async function writeSupportBundle(
  src: BundleSources,
  outFile: string,
): Promise<{ path: string; bytes: number; errors: string[] }> {
  const path = resolve(outFile);
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  // First: an existing path is refused before anything is collected.
  const out = await createPrivate(path);
  let work: string | undefined;
  try {
    work = await privateWorkDir();
    const root = `vpcnet-support-${hostname()}-${stamp(src.now())}`;
    const base = join(work, root);
    const errors: string[] = [];
    const redactions: string[] = [];
    const writer = {
      async write(name: string, content: string | Buffer) {
        const rel = normalize(name).replace(/^(\.\.(\/|$))+/, '');
        const file = join(base, rel);
        const clean = redactSecretsInBytes(typeof content === 'string' ? Buffer.from(content) : content);
        if (clean.redacted > 0) redactions.push(`${rel}\t${clean.redacted}`);
        await mkdir(dirname(file), { recursive: true });
        await writeFile(file, clean.content, { mode: 0o600 });
      },
      failed(what: string, why: string) {
        errors.push(`${what}: ${why.trim()}`);
      },
    };
    for (const c of COLLECTORS) {
      await c.collect(src, writer).catch((err: unknown) => writer.failed(c.name, errorText(err)));
    }
    await writer.write(
      'errors.txt',
      errors.length === 0 ? 'every collector succeeded\n' : `${errors.join('\n')}\n`,
    );
    await writer.write(
      'redactions.txt',
      redactions.length === 0
        ? 'nothing token-like was found\n'
        : `token-like values replaced by ${REDACTED}, per file:\n${redactions.join('\n')}\n`,
    );
    await tarInto(out, work, root);
    const bytes = (await out.stat()).size;
    await out.close();
    return { path, bytes, errors };
  } catch (err) {
    // Created above by this run (O_EXCL): a half-written bundle is no use to anyone.
    await out.close().catch(() => {});
    await unlink(path).catch(() => {});
    throw err;
  } finally {
    if (work !== undefined) await rm(work, { recursive: true, force: true });
  }
}

function sizeText(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

export async function runSupportBundleCommand(argv: string[], env: CliEnv): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      output: { type: 'string', short: 'o' },
      ...NODE_TARGET_OPTIONS,
      'state-dir': { type: 'string' },
      'del-spool-dir': { type: 'string' },
      'cni-conf-dir': { type: 'string' },
      logs: { type: 'string', multiple: true },
      'max-pod-namespaces': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    env.out(SUPPORT_BUNDLE_HELP);
    return 0;
  }
  const maxPods = Number(values['max-pod-namespaces'] ?? '50');
  if (!Number.isInteger(maxPods) || maxPods < 0) {
    env.err(`vpcnetctl support-bundle: --max-pod-namespaces takes a whole number\n`);
    return EXIT_USAGE;
  }
  const now = Date.now;
  const target = await resolveNodeTarget(
    values,
    {
      stateDir: values['state-dir'],
      delSpoolDir: values['del-spool-dir'],
      cniConfDir: values['cni-conf-dir'],
    },
    env.env,
  );
  const defaultLogs = target.agentLog === undefined ? DEFAULT_LOG_GLOBS : [target.agentLog];
  const src: BundleSources = {
    agentSocket: target.agentSocket,
    stateDir: target.stateDir,
    delSpoolDir: target.delSpoolDir,
    cniConfDir: target.cniConfDir,
    ...(target.netns === undefined ? {} : { nodeNetns: target.netns }),
    logGlobs: values.logs ?? defaultLogs,
    logGlobsGiven: values.logs !== undefined || target.agentLog !== undefined,
    maxPodNamespaces: maxPods,
    now,
  };
  const out = values.output ?? join(tmpdir(), `vpcnet-support-${hostname()}-${stamp(now())}.tar.gz`);
  let bundle: Awaited<ReturnType<typeof writeSupportBundle>>;
  try {
    bundle = await writeSupportBundle(src, out);
  } catch (err) {
    if (!(err instanceof BundleOutputExists)) throw err;
    env.err(`vpcnetctl support-bundle: ${err.message}\n`);
    return EXIT_USAGE;
  }
  if (bundle.errors.length > 0)
    env.err(`${bundle.errors.length} item(s) could not be collected (see errors.txt in the bundle)\n`);
  env.out(`${bundle.path} (${sizeText(bundle.bytes)})\n`);
  return 0;
}
