// The two forwarders side by side: the native one (src/plugin/native/*.c, shipped as bin/vpcnet)
// and the TypeScript one (main.ts + forward.ts + spool.ts, shipped as bin/vpcnet-js), freshly
// built into a temp dir before a test file's tests run, and run there with a given env and stdin.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
export const nativeDir = join(repoRoot, 'src/plugin/native');
const run = promisify(execFile);

export interface Outcome {
  readonly code: number | null;
  readonly stdout: Buffer;
  readonly ms: number;
}

export type Plugin = 'native' | 'js';

export interface BuiltPlugins {
  /** The temp dir: both binaries, and the working dir of every run. */
  readonly dir: string;
  readonly nativeBin: string;
  readonly jsBin: string;
  exec(plugin: Plugin, env: Record<string, string>, stdin: string | Buffer): Promise<Outcome>;
  execFileWithStdin(argv: string[], env: Record<string, string>, stdin: string | Buffer): Promise<Outcome>;
  /** Runs both plugins and asserts they exit and print the same; returns the native outcome. */
  same(env: Record<string, string>, stdin: string | Buffer, label: string): Promise<Outcome>;
}

/** Bundles the TypeScript forwarder (src/bin/vpcnet-js.ts) into the one file `outfile`. */
export async function bundleJsForwarder(outfile: string, extraFlags: readonly string[]): Promise<void> {
  await run(
    join(repoRoot, 'node_modules/.bin/esbuild'),
    [
      join(repoRoot, 'src/bin/vpcnet-js.ts'),
      '--bundle',
      '--platform=node',
      '--target=node20',
      '--format=cjs',
      `--outfile=${outfile}`,
      '--log-level=warning',
      ...extraFlags,
    ],
    { cwd: repoRoot },
  );
}

/** Call at the top of a test file: builds both plugins before its tests, removes them after. */
export function builtPlugins(): BuiltPlugins {
  const dir = mkdtempSync(join(tmpdir(), 'vpcnet-native-'));
  const nativeBin = join(dir, 'vpcnet');
  const jsBin = join(dir, 'vpcnet-js');

  before(async () => {
    const sources = readdirSync(nativeDir)
      .filter((n) => n.endsWith('.c'))
      .map((n) => join(nativeDir, n));
    const flags = ['-O2', '-s', '-Wall', '-Wextra', '-Werror', '-o', nativeBin, ...sources];
    await run('cc', ['-static', ...flags]).catch(() => run('cc', flags));
    await bundleJsForwarder(jsBin, ['--minify']);
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  function execFileWithStdin(
    argv: string[],
    env: Record<string, string>,
    stdin: string | Buffer,
  ): Promise<Outcome> {
    return new Promise((resolve, reject) => {
      const start = performance.now();
      // Async spawn: the fake agent lives in this process and must keep serving meanwhile.
      const child = spawn(argv[0] ?? '', argv.slice(1), {
        env,
        cwd: dir,
        stdio: ['pipe', 'pipe', 'inherit'],
      });
      const chunks: Buffer[] = [];
      child.stdout.on('data', (c: Buffer) => chunks.push(c));
      child.on('error', reject);
      child.on('close', (code) =>
        resolve({ code, stdout: Buffer.concat(chunks), ms: performance.now() - start }),
      );
      child.stdin.on('error', () => {}); // VERSION may exit before reading a large stdin
      child.stdin.end(stdin);
    });
  }

  function exec(plugin: Plugin, env: Record<string, string>, stdin: string | Buffer): Promise<Outcome> {
    return execFileWithStdin(plugin === 'native' ? [nativeBin] : [process.execPath, jsBin], env, stdin);
  }

  async function same(env: Record<string, string>, stdin: string | Buffer, label: string): Promise<Outcome> {
    const native = await exec('native', env, stdin);
    const js = await exec('js', env, stdin);
    assert.equal(native.code, js.code, `${label}: exit code`);
    assert.equal(
      native.stdout.toString('hex'),
      js.stdout.toString('hex'),
      `${label}: stdout bytes\n native: ${native.stdout}\n js:     ${js.stdout}`,
    );
    return native;
  }

  return { dir, nativeBin, jsBin, exec, execFileWithStdin, same };
}

/** The CNI_* environment of one attachment (add CNI_COMMAND). */
export const attachEnv = {
  CNI_CONTAINERID: '30c8f1e2',
  CNI_IFNAME: 'eth0',
  CNI_NETNS: '/var/run/netns/p1',
  CNI_PATH: '/opt/cni/bin',
};

/** A `vpcnet` network config with these keys on top. */
export const netconf = (extra: Record<string, unknown>) =>
  JSON.stringify({ cniVersion: '1.0.0', name: 'vpcnet', type: 'vpcnet', ...extra });

/** The CNI error a plugin printed. */
export function errorOf(out: Outcome): { cniVersion: string; code: number; msg: string; details?: string } {
  return JSON.parse(out.stdout.toString('utf8'));
}
