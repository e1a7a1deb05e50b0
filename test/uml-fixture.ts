// Runs a command under User-Mode Linux (scripts/run-in-uml.sh) for suites that need what this
// machine's kernel lacks, above all 802.1q VLAN devices for the branch-ENI `vlan` trunk driver.
// UML shares the host's files but has its own network stack: namespaces a command creates inside
// exist only there and vanish with the kernel.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const umlRunnerPath = fileURLToPath(new URL('../scripts/run-in-uml.sh', import.meta.url));

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
}

export interface UmlRunResult {
  /** The command's exit status; 125 when the UML kernel stopped before the command finished. */
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
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
      resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr });
    });
  });
}

export interface UmlGate {
  /** The `skip` option for `describe`: a reason outside CI when UML cannot be installed. */
  readonly skip: string | false;
  /** Call from `before`: throws (failing the suite) when UML is not there. */
  assertReady(): void;
}

/**
 * Installs UML when it is missing (the runner's --install-only). Under CI a suite never skips:
 * a failed installation fails it instead.
 */
export async function umlGate(): Promise<UmlGate> {
  const install = await new Promise<{ ok: boolean; detail: string }>((resolve) => {
    const child = spawn('bash', [umlRunnerPath, '--install-only'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let detail = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      detail += d;
    });
    child.on('error', (err) => resolve({ ok: false, detail: err.message }));
    child.on('close', (code) => resolve({ ok: code === 0, detail: detail.trim() }));
  });
  const reason = install.ok ? '' : `User-Mode Linux cannot be installed: ${install.detail}`;
  return {
    skip: reason !== '' && !underCi ? reason : false,
    assertReady() {
      if (reason !== '') throw new Error(reason);
    },
  };
}
