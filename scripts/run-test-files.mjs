// Runs the named test files with node:test in the order given, two at a time, and prints TAP:
// `node --test` sorts its files by path, and the mutation check wants the files likeliest to notice
// a mutation first (it stops a run at the first failure). Each file's process gets this process's
// execArgv (e.g. `--import tsx`).
// Usage: node [--import tsx] scripts/run-test-files.mjs [--timeout MS] FILE...
import { run } from 'node:test';
import { tap } from 'node:test/reporters';

const args = process.argv.slice(2);
const at = args.indexOf('--timeout');
const timeout = at >= 0 ? Number(args.splice(at, 2)[1]) : undefined;
if (args.length === 0 || args.some((a) => a.startsWith('-')) || (timeout !== undefined && !(timeout > 0))) {
  console.error('usage: node [--import tsx] scripts/run-test-files.mjs [--timeout MS] FILE...');
  process.exit(2);
}
const stream = run({ files: args, concurrency: 2, forceExit: true, ...(timeout ? { timeout } : {}) });
stream.on('test:fail', () => {
  process.exitCode = 1;
});
stream.compose(tap).pipe(process.stdout);
