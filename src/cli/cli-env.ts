// What every vpcnetctl command is given: where the executables are, where to write, the process
// environment. Its own file, so that main.ts (the dispatcher) and the commands it dispatches to
// need not import each other for it.
import { dirname, join, resolve } from 'node:path';

export interface CliEnv {
  /** Directory holding the built executables (bin/). */
  readonly binDir: string;
  /**
   * This executable (bin/vpcnetctl, or bin/kubectl-vpcnet copied onto PATH alone): what a command
   * runs again inside a lab's namespace.
   */
  readonly self: string;
  readonly out: (s: string) => void;
  readonly err: (s: string) => void;
  /** The process environment (install reads ENABLE_BANDWIDTH_PLUGIN from it; NO_COLOR). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Whether stdout is a terminal (colour only then). */
  readonly stdoutIsTty: boolean;
}

export function defaultCliEnv(): CliEnv {
  const self = resolve(process.argv[1] ?? join(process.cwd(), 'bin', 'vpcnetctl'));
  return {
    binDir: dirname(self),
    self,
    out: (s) => process.stdout.write(s),
    err: (s) => process.stderr.write(s),
    env: process.env,
    stdoutIsTty: process.stdout.isTTY === true,
  };
}
