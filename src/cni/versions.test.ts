import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compareVersions, errorVersionFor, isPre100, isSupportedVersion } from './versions.ts';

test('versions compare numerically, not as strings', () => {
  assert.equal(compareVersions('0.4.0', '1.0.0'), -1);
  assert.equal(compareVersions('1.10.0', '1.9.0'), 1);
  assert.equal(compareVersions('1.1', '1.1.0'), 0);
});

test('exactly the five spec versions are supported', () => {
  for (const v of ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0']) assert.ok(isSupportedVersion(v), v);
  for (const v of ['0.1.0', '0.2.0', '1.2.0', '', '1.0']) assert.equal(isSupportedVersion(v), false, v);
});

test('only versions before 1.0.0 count as pre-1.0', () => {
  assert.equal(isPre100('0.4.0'), true);
  assert.equal(isPre100('1.0.0'), false);
});

test('error objects use the stdin cniVersion when readable, else 1.0.0', () => {
  assert.equal(errorVersionFor('{"cniVersion":"0.3.1"}'), '0.3.1');
  assert.equal(errorVersionFor('{"cniVersion":3}'), '1.0.0');
  assert.equal(errorVersionFor('not json'), '1.0.0');
  assert.equal(errorVersionFor(''), '1.0.0');
});
