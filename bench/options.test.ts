import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseOptions, SECTIONS, USAGE, UsageError } from './options.ts';

test('no options: every section, the default sizes', () => {
  const o = parseOptions([]);
  assert.deepEqual([...o.sections], [...SECTIONS]);
  assert.equal(o.help, false);
  assert.equal(o.inFlight, 50);
  assert.equal(o.serviceBursts, 3);
  assert.deepEqual(o.fillLevels, [10, 50, 100, 200]);
});

test('options are read; -h asks for the usage, which names every option', () => {
  const o = parseOptions(['--only', 'service, kernel', '--service-bursts', '5', '--fill-levels', '10,20']);
  assert.deepEqual([...o.sections], ['service', 'kernel']);
  assert.equal(o.serviceBursts, 5);
  assert.deepEqual(o.fillLevels, [10, 20]);
  assert.equal(parseOptions(['-h']).help, true);
  for (const name of ['only', 'pods', 'burst', 'in-flight', 'service-bursts', 'fill-levels', 'fill-pairs'])
    assert.match(USAGE, new RegExp(`--${name} `));
});

test('what the bench cannot run with is a UsageError that says why', () => {
  const refused = (args: string[], why: RegExp) =>
    assert.throws(
      () => parseOptions(args),
      (err: unknown) => err instanceof UsageError && why.test(err.message),
    );
  refused(['--bogus'], /Unknown option '--bogus'/);
  refused(['--only', 'ops,nope'], /unknown section nope/);
  refused(['--service-bursts', '0'], /--service-bursts must be a positive integer, got "0"/);
  refused(['--fill-levels', '10,x'], /--fill-levels must be a positive integer, got "x"/);
});
