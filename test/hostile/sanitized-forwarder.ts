// The C forwarder (src/plugin/native) built for hostile-input tests: with AddressSanitizer and
// UndefinedBehaviorSanitizer (gcc; dynamic, as the sanitizer runtimes are shared libraries) and a
// short deadline, so that a test sees a memory error or undefined behaviour as a report on stderr
// and can watch the deadline hold. Runs capture stdout, stderr and the time taken.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { nativeDir } from '../../src/plugin/testing/built-plugins.ts';

const run = promisify(execFile);

/** The deadline compiled into the test build (bin/vpcnet waits 120 s for an ADD's answer). */
export const TEST_DEADLINE_MS = 1500;

const SANITIZE = ['-fsanitize=address,undefined', '-fno-sanitize-recover=all', '-fno-omit-frame-pointer'];

/**
 * A finding aborts the run with a report on stderr and one of these exit codes, so that neither can
 * pass for a CNI error's exit code 1.
 */
export const SANITIZER_ENV = {
  ASAN_OPTIONS: 'exitcode=86:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1',
  UBSAN_OPTIONS: 'exitcode=87:print_stacktrace=1:halt_on_error=1',
};

/** Why a sanitized program cannot be built and run here, or undefined when it can. */
export async function sanitizerProblem(dir: string): Promise<string | undefined> {
  const probe = join(dir, 'probe');
  try {
    await run('sh', [
      '-c',
      `printf 'int main(void){return 0;}' | cc ${SANITIZE.join(' ')} -x c - -o "$0" && "$0"`,
      probe,
    ]);
    return undefined;
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? String(err);
    return `cc cannot build and run a program with ${SANITIZE[0]} (install gcc's libasan and libubsan: scripts/setup.sh): ${stderr.trim()}`;
  }
}

/** Compiles the forwarder into `dir` and returns the binary's path. */
export async function buildSanitizedForwarder(dir: string): Promise<string> {
  const bin = join(dir, 'vpcnet-sanitized');
  const sources = readdirSync(nativeDir)
    .filter((n) => n.endsWith('.c'))
    .map((n) => join(nativeDir, n));
  await run('cc', [
    ...SANITIZE,
    '-g',
    '-O1',
    '-Wall',
    '-Wextra',
    '-Werror',
    `-DTOTAL_TIMEOUT_MS=${TEST_DEADLINE_MS}`,
    '-o',
    bin,
    ...sources,
  ]);
  return bin;
}

export interface ForwarderRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: Buffer;
  readonly stderr: string;
  /** What the command wrote on fd 3 (a listing a wrapper script reports there). */
  readonly fd3: string;
  readonly ms: number;
}

/** Runs argv with `env` (plus the sanitizer options) and `stdin`; kills it after `killAfterMs`. */
export function runForwarder(
  argv: readonly string[],
  env: Readonly<Record<string, string>>,
  stdin: string | Buffer,
  killAfterMs = TEST_DEADLINE_MS + 15_000,
): Promise<ForwarderRun> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(argv[0] ?? '', argv.slice(1), {
      env: { ...env, ...SANITIZER_ENV },
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const fd3: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.stdio[3]?.on('data', (c: Buffer) => fd3.push(c));
    const killer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(killer);
      resolve({
        code,
        signal,
        stdout: Buffer.concat(out),
        stderr: Buffer.concat(err).toString('utf8'),
        fd3: Buffer.concat(fd3).toString('utf8'),
        ms: performance.now() - started,
      });
    });
    child.stdin.on('error', () => {}); // it may exit before reading all of a huge stdin
    child.stdin.end(stdin);
  });
}

/** The CNI error object the forwarder printed. */
export interface PrintedCniError {
  readonly cniVersion: string;
  readonly code: number;
  readonly msg: string;
  readonly details?: string;
}

/** The run ended on its own: no signal, no sanitizer report, nothing on stderr. */
export function assertCleanRun(r: ForwarderRun, label: string): void {
  assert.equal(r.signal, null, `${label}: killed by ${r.signal} after ${Math.round(r.ms)} ms\n${r.stderr}`);
  assert.equal(r.stderr, '', `${label}: stderr must stay empty (a sanitizer report?)`);
  assert.ok(r.code !== 86 && r.code !== 87, `${label}: sanitizer exit code ${r.code}`);
}

/**
 * A clean run (assertCleanRun) that printed either
 * nothing (a DEL or STATUS that succeeded), a result with exit 0, or a CNI error object with a
 * non-zero exit. Returns the error, if one was printed.
 */
export function assertCleanCniRun(r: ForwarderRun, label: string): PrintedCniError | undefined {
  assertCleanRun(r, label);
  const text = r.stdout.toString('utf8');
  if (r.code === 0) {
    if (text !== '') assert.equal(typeof JSON.parse(text), 'object', `${label}: a result is a JSON object`);
    return undefined;
  }
  let printed: unknown;
  try {
    printed = JSON.parse(text);
  } catch {
    assert.fail(
      `${label}: exit ${r.code} with stdout that is not JSON: ${JSON.stringify(text.slice(0, 300))}`,
    );
  }
  const e = printed as Record<string, unknown>;
  const keys = Object.keys(e).sort();
  assert.ok(
    keys.join() === 'cniVersion,code,msg' || keys.join() === 'cniVersion,code,details,msg',
    `${label}: CNI error keys ${keys.join()}`,
  );
  assert.equal(typeof e.cniVersion, 'string', label);
  assert.ok(Number.isInteger(e.code) && (e.code as number) > 0, `${label}: code ${String(e.code)}`);
  assert.ok(typeof e.msg === 'string' && e.msg !== '', `${label}: msg`);
  if ('details' in e) assert.equal(typeof e.details, 'string', label);
  return e as unknown as PrintedCniError;
}

export interface SanitizedForwarder {
  /** A temp dir for the test file's sockets and spools (removed by `dispose`). */
  readonly dir: string;
  /** The sanitized binary. */
  readonly bin: string;
  /** Runs the binary with `env` and `stdin` (see runForwarder). */
  run(env: Readonly<Record<string, string>>, stdin: string | Buffer): Promise<ForwarderRun>;
  dispose(): void;
}

/**
 * For the top of a test file (top-level await): probes the sanitizer runtime and builds the
 * forwarder. Without the runtime it throws under CI=true, failing the file with the reason, and
 * returns the reason elsewhere, for the file to skip its tests with.
 */
export async function prepareSanitizedForwarder(): Promise<SanitizedForwarder | string> {
  const dir = mkdtempSync(join(tmpdir(), 'vpchx-sanitized-'));
  const problem = await sanitizerProblem(dir);
  if (problem !== undefined) {
    rmSync(dir, { recursive: true, force: true });
    if (process.env.CI === 'true') throw new Error(problem);
    return problem;
  }
  const bin = await buildSanitizedForwarder(dir);
  return {
    dir,
    bin,
    run: (env, stdin) => runForwarder([bin], env, stdin),
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
}
