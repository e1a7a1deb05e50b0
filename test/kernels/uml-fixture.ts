// Runs a command under User-Mode Linux (scripts/run-in-uml.sh) for suites that need what this
// machine's kernel lacks, above all 802.1q VLAN devices for the branch-ENI `vlan` trunk driver.
// UML shares the host's files but has its own network stack: namespaces a command creates inside
// exist only there and vanish with the kernel.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { GUEST_SUITE_ENV, guestSuiteTests } from './guest-suites.ts';

export const umlRunnerPath = fileURLToPath(new URL('../../scripts/run-in-uml.sh', import.meta.url));

const underCi = process.env.CI === 'true' || process.env.CI === '1';

export interface UmlRunOptions {
  /** Set inside, besides PATH and HOME (the only variables a UML command starts with). */
  readonly env?: Readonly<Record<string, string>>;
  /** UML's RAM, e.g. '1G'; the runner's default is 2G. */
  readonly memory?: string;
  /** Kernel modules to load, replacing the runner's default list (8021q, veth, macvlan, …). */
  readonly modules?: readonly string[];
  /** Working directory inside (and of the runner); default: this process's. */
  readonly cwd?: string;
  /** The run is stopped and the promise rejected after this long; default 180 s. */
  readonly timeoutMs?: number;
  /** The runner's own environment on top of this process's (VPCNET_UML, its test stand-ins). */
  readonly runnerEnv?: Readonly<Record<string, string>>;
}

export interface UmlRunResult {
  /** The command's exit status; 125 when the UML kernel stopped before the command finished. */
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** The runner's line naming the kernel that ran and why ("UML 6.1.176 (/usr/bin/linux.uml): …"). */
  readonly kernel: string | undefined;
}

/** The runner's "run-in-uml: UML <release> (<binary>): <why>" line, without its prefix. */
export function kernelLine(stderr: string): string | undefined {
  return /^run-in-uml: (UML \S+ \(.*)$/m.exec(stderr)?.[1];
}

/** The release in a kernel line. */
export function kernelRelease(line: string | undefined): string | undefined {
  return line === undefined ? undefined : /^UML (\S+) /.exec(line)?.[1];
}

/** Boots UML, runs argv there, and resolves with what the command printed and its exit status. */
export function runInUml(argv: readonly string[], opts: UmlRunOptions = {}): Promise<UmlRunResult> {
  const runnerArgs: string[] = [];
  if (opts.memory !== undefined) runnerArgs.push('--memory', opts.memory);
  if (opts.modules !== undefined) runnerArgs.push('--modules', opts.modules.join(' '));
  for (const [name, value] of Object.entries(opts.env ?? {})) runnerArgs.push(`${name}=${value}`);
  runnerArgs.push('--', ...argv);
  const timeoutMs = opts.timeoutMs ?? 180_000;

  return new Promise((resolve, reject) => {
    const runner = spawn('bash', [umlRunnerPath, ...runnerArgs], {
      cwd: opts.cwd ?? process.cwd(),
      env: { ...process.env, ...opts.runnerEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    runner.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    runner.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    let timedOut = false;
    let forceKill: NodeJS.Timeout | undefined;
    // SIGTERM lets the runner stop UML and remove its scratch files; SIGKILL is the fallback (UML
    // still stops then: the runner starts it with a parent-death signal).
    const deadline = setTimeout(() => {
      timedOut = true;
      runner.kill('SIGTERM');
      forceKill = setTimeout(() => runner.kill('SIGKILL'), 15_000);
    }, timeoutMs);
    runner.on('error', (err) => {
      clearTimeout(deadline);
      reject(new Error(`cannot start ${umlRunnerPath}: ${err.message}`));
    });
    runner.on('close', (code, signal) => {
      clearTimeout(deadline);
      if (forceKill) clearTimeout(forceKill);
      if (timedOut) {
        reject(
          new Error(`${argv.join(' ')} under UML did not finish within ${timeoutMs} ms; stderr: ${stderr}`),
        );
        return;
      }
      resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr, kernel: kernelLine(stderr) });
    });
  });
}

export interface UmlGate {
  /** The `skip` option for `describe`: a reason outside CI when no UML kernel can run here. */
  readonly skip: string | false;
  /** The runner's line naming the kernel it chose and why; undefined when none could run. */
  readonly kernel: string | undefined;
  /** Call from `before`: throws (failing the suite) with the runner's reason when UML cannot run. */
  assertReady(): void;
}

/**
 * Installs UML and lets the runner choose its kernel (the runner's --install-only: Debian 12's where
 * it boots, else the newer one). Under CI a suite never skips: when no kernel boots, it fails with
 * the runner's account, the consoles' last lines included.
 */
export async function umlGate(runnerEnv: Readonly<Record<string, string>> = {}): Promise<UmlGate> {
  const install = await new Promise<{ ok: boolean; detail: string }>((resolve) => {
    const child = spawn('bash', [umlRunnerPath, '--install-only'], {
      env: { ...process.env, ...runnerEnv },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let detail = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      detail += d;
    });
    child.on('error', (err) => resolve({ ok: false, detail: err.message }));
    child.on('close', (code) => resolve({ ok: code === 0, detail: detail.trim() }));
  });
  const reason = install.ok ? '' : `User-Mode Linux cannot run on this host:\n${install.detail}`;
  return {
    skip: reason !== '' && !underCi ? reason : false,
    kernel: install.ok ? kernelLine(install.detail) : undefined,
    assertReady() {
      if (reason === '') return;
      // The runner's own words say what failed; a stack trace of this fixture would only bury them.
      const err = new Error(reason);
      err.stack = reason;
      throw err;
    },
  };
}

/** One test per suite in test/kernels/uml/, each run inside UML (guest-suites.ts). */
export function umlSuiteTests(
  test: Parameters<typeof guestSuiteTests>[0],
  runnerEnv: Readonly<Record<string, string>> = {},
): void {
  guestSuiteTests(test, 'uml', 'under User-Mode Linux', async (argv) => {
    // UML's one CPU runs the lab's emulator, agent and every process a test spawns: the lab's waits
    // (an emulator admin call answers within 10 s on the host) stretch threefold there.
    const env = { ...GUEST_SUITE_ENV, VPCNET_LAB_TIMEOUT_SCALE: '3' };
    const r = await runInUml(argv, { env, memory: '2G', timeoutMs: 600_000, runnerEnv });
    return { ...r, kernel: r.kernel ?? 'not reported' };
  });
}
