// Runs the project's tests with node:test (Node 20's --test takes no globs): every *.test.ts under
// src/, bench/ (the benchmark's own unit tests) and test/, in one run. Two files run at a time, but a
// file under test/ (namespaces, labs, real clients, timings) runs alone: test/kernel-turn.ts, preloaded,
// makes it wait for the turn (an flock on VPCNET_TEST_TURN), which unit files share. A file under
// test/ that says so in a line of its own, `// Test turn: shared (why)`, shares it too: a lab whose
// time goes to waiting for its agents (timers, reconcile passes, quarantines), with no bound on CPU
// time or latency and nothing host-wide (real clients, the host's CNI directories, a fixed lab name).
// Usage: see USAGE below (`--help`); .ci/run passes --exhaustive (the EXHAUSTIVE suites below).
// Every test process also preloads test/kernel-log-guard.ts, which fails a file during which the kernel
// logged a line naming vpcnet's netlink helper.
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, normalize, sep } from 'node:path';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';

// Suites run inside another kernel by a suite of the host run: test/kernels/uml/ under User-Mode
// Linux (test/kernels/uml.test.ts), test/kernels/vm/ in a QEMU VM with Debian's stock kernel
// (test/kernels/vm.test.ts).
const GUEST_SUITES = new Set([join('test', 'kernels', 'uml'), join('test', 'kernels', 'vm')]);

// Slow and exhaustive: run by CI (.ci/run) and on request, not by a plain `npm test`.
//   the mutation check runs the unit tests beside each mutation until one fails (~1.2 minutes);
//   test/kernels/uml/ again under Debian unstable's UML, the one hosts with AMX CPUs use (~1.3 minutes);
//   the VM suite boots a stock kernel under software emulation (~1.5 minutes; ~400 MB on first use);
//   the three taint storms (~3.5 minutes, beside other labs; test/lab/capacity.test.ts covers the
//   taint in every run); one node filled to its maximum pods under six warm settings (~2.3 minutes).
const EXHAUSTIVE = new Set([
  join('test', 'mutation-check.test.ts'),
  join('test', 'kernels', 'uml-newer.test.ts'),
  join('test', 'kernels', 'vm.test.ts'),
  join('test', 'lab', 'capacity-storm.test.ts'),
  join('test', 'lab', 'fill-rate.test.ts'),
]);

// Unit files that take the longest (a property run of the agent under churn, the small fleet, the
// audit of 1,000 simulated nodes) start first, so that two at a time the unit files end together
// rather than one long file running alone at the end while namespace suites wait for it.
// Likewise the longest test/ files that share the turn start first among those.
const SLOW_FIRST = [
  join('src', 'agent', 'agent-churn.property.test.ts'),
  join('bench', 'fleet', 'fleet.test.ts'),
  join('src', 'cli', 'audit', 'audit-scale.emulator.test.ts'),
  join('test', 'lab', 'audit.test.ts'),
  join('test', 'lab', 'storm.test.ts'),
];

function slowFirst(files) {
  const slow = SLOW_FIRST.filter((f) => files.includes(f));
  return [...slow, ...files.filter((f) => !slow.includes(f))];
}

function find(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (GUEST_SUITES.has(p)) continue;
    if (statSync(p).isDirectory()) out.push(...find(p));
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out.sort();
}
const SHARED_MARK = /^\/\/ Test turn: shared\b/m;
/** test/ files that share the turn; they run before the ones that take it alone, so they pair up. */
function sharedTurn(files) {
  return files.filter((f) => f.startsWith(`test${sep}`) && SHARED_MARK.test(readFileSync(f, 'utf8')));
}
function inTurnOrder(files, shared) {
  const [first, rest] = [
    files.filter((f) => !f.startsWith(`test${sep}`)),
    files.filter((f) => f.startsWith(`test${sep}`)),
  ];
  return [...slowFirst(first), ...slowFirst(shared), ...rest.filter((f) => !shared.includes(f))];
}

const USAGE = `usage: node scripts/test.mjs [--unit|--integration] [--exhaustive] [FILE.test.ts...]
  --unit          src/ and bench/ only (no root, no namespaces; ~3.5 minutes)
  --integration   test/ only
  --exhaustive    adds the CI-only suites (the mutation check, the newer UML, the VM, storms, fill rate)
  FILE...         just these files (in the same turns)`;
const args = process.argv.slice(2);
const OPTIONS = new Set(['--unit', '--integration', '--exhaustive']);
if (args.includes('--help') || args.includes('-h')) {
  console.log(USAGE);
  process.exit(0);
}
const unknown = args.filter((a) => a.startsWith('-') && !OPTIONS.has(a));
if (unknown.length > 0) {
  console.error(`scripts/test.mjs: unknown option ${unknown.join(', ')}\n${USAGE}`);
  process.exit(2);
}
const explicit = args.filter((a) => !a.startsWith('--'));
const exhaustive = args.includes('--exhaustive');
let files;
if (explicit.length > 0) files = explicit;
else if (args.includes('--unit')) files = [...find('src'), ...find('bench')];
else if (args.includes('--integration')) files = find('test');
else files = [...find('src'), ...find('bench'), ...find('test')];
if (explicit.length === 0 && !exhaustive) files = files.filter((f) => !EXHAUSTIVE.has(f));
files = files.map((f) => normalize(f));
const shared = sharedTurn(files);
files = inTurnOrder(files, shared);
const turn = join(tmpdir(), `vpcnet-test-turn-${process.pid}.lock`);
// node:test's run(), not `node --test`: the command line sorts the files by path, which would undo
// the order above. Each file's process gets this process's execArgv and environment.
process.execArgv.push(
  '--import',
  'tsx',
  '--import',
  './test/kernel-turn.ts',
  '--import',
  './test/kernel-log-guard.ts',
);
Object.assign(process.env, {
  VPCNET_TEST_TURN: turn,
  VPCNET_TEST_SHARED_TURN: shared.join('\n'),
  // Suites that scale their cases read it (the plugin fuzz: 600 cases in CI, 250 otherwise).
  VPCNET_TEST_EXHAUSTIVE: exhaustive ? '1' : '0',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
});
const stream = run({ files, concurrency: 2 });
stream.on('test:fail', () => {
  process.exitCode = 1;
});
stream.on('end', () => rmSync(turn, { force: true }));
stream.compose(spec).pipe(process.stdout);
