// Suites that run inside another kernel (test/kernels/uml/ under User-Mode Linux, test/kernels/vm/ in the stock-kernel
// VM): one host test per file, which runs the file there as one node:test run with the kernel-log
// guard preloaded (so the guest kernel's complaints about the helper fail it too) and prints the
// whole inner report, so the output says which kernel and trunk driver ran.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';

/** What a guest run hands back: the command's status and output, and the runner's kernel line. */
export interface GuestRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly kernel: string;
}

type TestFn = (name: string, fn: (t: { diagnostic(line: string): void }) => Promise<void>) => unknown;

/** `node --test` of one suite file, as the host's own run (scripts/test.mjs) starts its files. */
export function guestNodeTest(file: string): string[] {
  return [
    'node',
    '--import',
    'tsx',
    '--import',
    './test/kernel-log-guard.ts',
    '--test',
    '--test-concurrency=1',
    '--test-reporter=spec',
    file,
  ];
}

/** The environment a suite needs inside (a guest starts with PATH and HOME only). */
export const GUEST_SUITE_ENV = {
  CI: process.env.CI ?? '',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
};

/** One `test` per `test/kernels/<dir>/*.test.ts`, each run in the guest by `run`. */
export function guestSuiteTests(
  test: TestFn,
  dir: string,
  where: string,
  run: (argv: string[]) => Promise<GuestRun>,
): void {
  const files = readdirSync(new URL(`./${dir}/`, import.meta.url))
    .filter((f) => f.endsWith('.test.ts'))
    .sort();
  for (const file of files) {
    test(`test/kernels/${dir}/${file} passes ${where}`, async (t) => {
      const r = await run(guestNodeTest(`test/kernels/${dir}/${file}`));
      t.diagnostic(`kernel: ${r.kernel}`);
      for (const line of r.stdout.trimEnd().split('\n')) t.diagnostic(line);
      assert.equal(r.code, 0, `exit ${r.code}; stderr: ${r.stderr}`);
      assert.match(r.stdout, /ℹ fail 0/);
      assert.doesNotMatch(r.stdout, /ℹ pass 0\b/, 'the suite ran no test');
    });
  }
}
