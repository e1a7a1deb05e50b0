// `vpcnetctl support-bundle`: one .tar.gz an operator attaches to a bug report. The collectors
// (bundle-collectors.ts) write into a temporary directory, then Debian's tar packs it: tar is on
// every node and in the image (Essential in Debian), and a tar writer of our own would be code to
// keep correct for no gain.
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { dirname, join, normalize, resolve } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { DEFAULT_AGENT_SOCKET } from '../cni/wire.ts';
import { errorText } from '../infra/error-text.ts';
import { type BundleSources, COLLECTORS } from './bundle-collectors.ts';
import type { CliEnv } from './main.ts';
import { EXIT_USAGE } from './output.ts';

const DEFAULT_STATE_DIR = '/var/lib/vpcnet';
const DEFAULT_CNI_CONF_DIR = '/etc/cni/net.d';
export const DEFAULT_LOG_GLOBS = ['/var/log/pods/kube-system_vpcnet-*/*/*.log'];

export const SUPPORT_BUNDLE_HELP = `Usage: vpcnetctl support-bundle [-o FILE] [--agent-socket PATH] [--state-dir DIR]
         [--del-spool-dir DIR] [--cni-conf-dir DIR] [--logs GLOB ...] [--max-pod-namespaces N]

Writes one .tar.gz for a bug report: the agent's state JSON, status and pods summaries, the
ledger files (snapshot and journal), the DEL spool listing, the CNI conf dir's files, 'ip -j'
dumps (link, addr, route table all, rule, neigh) and 'nft list ruleset' of this namespace,
'ip -d link/addr' inside each attached pod's namespace, the agent's logs, and versions. What
cannot be collected is listed in errors.txt inside the bundle. No environment or credentials
are collected.
  -o FILE          where to write (default /tmp/vpcnet-support-<host>-<time>.tar.gz)
  --state-dir      the agent's state dir (default ${DEFAULT_STATE_DIR}; the spool is DIR/del-spool)
  --cni-conf-dir   default ${DEFAULT_CNI_CONF_DIR}
  --logs GLOB      log files to include (repeatable; default ${DEFAULT_LOG_GLOBS.join(' ')}, if present)
`;

const run = promisify(execFile);

function stamp(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
}

export async function writeSupportBundle(
  src: BundleSources,
  outFile: string,
): Promise<{ path: string; bytes: number; errors: string[] }> {
  const work = await mkdtemp(join(tmpdir(), 'vpcnet-support-'));
  const root = `vpcnet-support-${hostname()}-${stamp(src.now())}`;
  const errors: string[] = [];
  try {
    const writer = {
      async write(name: string, content: string | Buffer) {
        const rel = normalize(name).replace(/^(\.\.(\/|$))+/, '');
        const path = join(work, root, rel);
        await mkdir(dirname(path), { recursive: true });
        await writeFile(path, content, { mode: 0o600 });
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
    const path = resolve(outFile);
    await mkdir(dirname(path), { recursive: true });
    await run('tar', ['-czf', path, '-C', work, root], { timeout: 120_000 });
    // It names every pod of the node and their addresses: root's to read, as the state dir is.
    await chmod(path, 0o600);
    return { path, bytes: (await stat(path)).size, errors };
  } finally {
    await rm(work, { recursive: true, force: true });
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
      'agent-socket': { type: 'string' },
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
  const stateDir = values['state-dir'] ?? DEFAULT_STATE_DIR;
  const src: BundleSources = {
    agentSocket: values['agent-socket'] ?? DEFAULT_AGENT_SOCKET,
    stateDir,
    delSpoolDir: values['del-spool-dir'] ?? join(stateDir, 'del-spool'),
    cniConfDir: values['cni-conf-dir'] ?? DEFAULT_CNI_CONF_DIR,
    logGlobs: values.logs ?? DEFAULT_LOG_GLOBS,
    logGlobsGiven: values.logs !== undefined,
    maxPodNamespaces: maxPods,
    now,
  };
  const out = values.output ?? join(tmpdir(), `vpcnet-support-${hostname()}-${stamp(now())}.tar.gz`);
  const bundle = await writeSupportBundle(src, out);
  if (bundle.errors.length > 0)
    env.err(`${bundle.errors.length} item(s) could not be collected (see errors.txt in the bundle)\n`);
  env.out(`${bundle.path} (${sizeText(bundle.bytes)})\n`);
  return 0;
}
