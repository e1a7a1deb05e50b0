// A CliEnv whose output a test reads back.
import type { CliEnv } from '../cli-env.ts';

export interface CapturedCli extends CliEnv {
  stdout(): string;
  stderr(): string;
}

export function captureCli(options: { tty?: boolean; env?: Record<string, string> } = {}): CapturedCli {
  let out = '';
  let err = '';
  return {
    binDir: '/nonexistent/bin',
    self: '/nonexistent/bin/vpcnetctl',
    out: (s) => {
      out += s;
    },
    err: (s) => {
      err += s;
    },
    env: options.env ?? {},
    stdoutIsTty: options.tty ?? false,
    stdout: () => out,
    stderr: () => err,
  };
}
