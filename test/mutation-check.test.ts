// The mutation check of the five rules (scripts/mutation-check.mjs) as part of the suite: every
// mutation must be noticed by the unit tests it names, so a rule cannot lose its tests unseen.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { runProcess } from '../src/infra/process.ts';
import { repoRoot } from './lab-fixture.ts';

test('the unit tests notice each mutation that breaks one of the five rules', {
  timeout: 15 * 60_000,
}, async () => {
  const out = await runProcess([process.execPath, join(repoRoot, 'scripts', 'mutation-check.mjs')], {
    timeoutMs: 14 * 60_000,
  });
  const lines = out.stdout.split('\n').filter((l) => l.trim() !== '');
  const verdicts = lines.filter((l) => /^(KILLED|SURVIVED|STALE|ERROR)\s/.test(l));
  assert.ok(verdicts.length >= 10, `expected one verdict per mutation:\n${out.stdout}\n${out.stderr}`);
  assert.deepEqual(
    verdicts.filter((l) => !l.startsWith('KILLED')),
    [],
    'mutations the tests did not notice',
  );
  assert.equal(out.code, 0, out.stderr);
});
