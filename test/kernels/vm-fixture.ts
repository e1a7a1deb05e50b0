// Runs a command in a QEMU virtual machine booting Debian 12's stock kernel (scripts/run-in-vm.sh),
// for suites that need 802.1q and nf_tables in one kernel: this machine's kernel has no 802.1q,
// User-Mode Linux no nf_tables. The VM shares the host's files but has its own kernel and network
// stack: namespaces a command creates inside exist only there and vanish with the VM. Under
// software emulation a run takes ~7 s more than its command, which runs ~10 times slower than here.
import { fileURLToPath } from 'node:url';
import { runProcess } from '../../src/infra/process.ts';

export const vmRunnerPath = fileURLToPath(new URL('../../scripts/run-in-vm.sh', import.meta.url));

const underCi = process.env.CI === 'true' || process.env.CI === '1';

export interface VmRunOptions {
  /** Set inside, besides PATH and HOME (the only variables a command in the VM starts with). */
  readonly env?: Readonly<Record<string, string>>;
  /** Virtual CPUs; the runner's default is 2. */
  readonly cpus?: number;
  /** The guest's RAM, e.g. '2G'; the runner's default is 3G. */
  readonly memory?: string;
  /** The runner stops the VM after this long (exit 125); default 300 s. */
  readonly timeoutMs?: number;
}

/** The kernel that ran, as the runner reports it on its first line. */
export interface VmKernel {
  /** `uname -r` inside, e.g. 6.1.0-57-amd64. */
  readonly release: string;
  /** QEMU's acceleration: tcg (software) or kvm. */
  readonly accel: string;
}

export interface VmRunResult {
  /** The command's exit status; 125 when the VM stopped without it (boot failure, timeout). */
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly kernel: VmKernel | undefined;
}

/** The runner's "run-in-vm: Debian kernel <release> under QEMU (<accel>)" line, parsed. */
export function vmKernelOf(stderr: string): VmKernel | undefined {
  const m = /^run-in-vm: Debian kernel (\S+) under QEMU \((\w+)\)$/m.exec(stderr);
  return m?.[1] !== undefined && m[2] !== undefined ? { release: m[1], accel: m[2] } : undefined;
}

export function describeVmKernel(kernel: VmKernel | undefined): string {
  return kernel === undefined ? 'not reported' : `Debian ${kernel.release} under QEMU (${kernel.accel})`;
}

/** Boots the VM, runs argv there from this process's working directory, and returns what it said. */
export async function runInVm(argv: readonly string[], opts: VmRunOptions = {}): Promise<VmRunResult> {
  const timeoutMs = opts.timeoutMs ?? 300_000;
  const runnerArgs = ['--timeout', String(Math.ceil(timeoutMs / 1000))];
  if (opts.cpus !== undefined) runnerArgs.push('--cpus', String(opts.cpus));
  if (opts.memory !== undefined) runnerArgs.push('--memory', opts.memory);
  for (const [name, value] of Object.entries(opts.env ?? {})) runnerArgs.push(`${name}=${value}`);
  // The runner enforces the limit itself (it stops QEMU and says so); this one only catches a runner
  // that hangs, with room for a first use's installation.
  const r = await runProcess(['bash', vmRunnerPath, ...runnerArgs, '--', ...argv], {
    timeoutMs: timeoutMs + 300_000,
  });
  return { code: r.code, stdout: r.stdout, stderr: r.stderr, kernel: vmKernelOf(r.stderr) };
}

export interface VmGate {
  /** The `skip` option for `describe`: a reason outside CI when the VM cannot be installed. */
  readonly skip: string | false;
  /** Call from `before`: throws (failing the suite) when the VM cannot run. */
  assertReady(): void;
}

/**
 * Installs what the VM needs on first use (the runner's --install-only: QEMU, the kernel package
 * unpacked into its cache, the initramfs). Under CI a suite never skips: a failed installation
 * fails it instead.
 */
export async function vmGate(): Promise<VmGate> {
  const install = await runProcess(['bash', vmRunnerPath, '--install-only']);
  const reason =
    install.code === 0
      ? ''
      : `the VM runner cannot be installed (exit ${install.code}): ${install.stderr.trim()}`;
  return {
    skip: reason !== '' && !underCi ? reason : false,
    assertReady() {
      if (reason !== '') throw new Error(reason);
    },
  };
}
