// Runs every *.test.ts under src/, bench/ (the benchmark's own unit tests) and test/ with node:test
// (Node 20's --test takes no globs). Every test process preloads test/kernel-log-guard.ts, which
// fails a file during which the kernel logged a line naming vpcnet's netlink helper.
// Usage: node scripts/test.mjs [--unit|--integration] [extra files...]
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

// test/uml/ holds suites that need a kernel with 802.1q: test/uml.test.ts runs them under User-Mode
// Linux, so they are not run on the host directly.
const UML_SUITES = join('test', 'uml');

function find(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (p === UML_SUITES) continue;
    if (statSync(p).isDirectory()) out.push(...find(p));
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out.sort();
}
const args = process.argv.slice(2);
const explicit = args.filter((a) => !a.startsWith('--'));
let files;
if (explicit.length > 0) files = explicit;
else if (args.includes('--unit')) files = [...find('src'), ...find('bench')];
else if (args.includes('--integration')) files = find('test');
else files = [...find('src'), ...find('bench'), ...find('test')];
const r = spawnSync(
  process.execPath,
  [
    '--import',
    'tsx',
    '--import',
    './test/kernel-log-guard.ts',
    '--test',
    '--test-concurrency=1',
    '--test-reporter=spec',
    ...files,
  ],
  { stdio: 'inherit', env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' } },
);
process.exit(r.status ?? 1);
