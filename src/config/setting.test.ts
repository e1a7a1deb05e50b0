import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError } from './config-error.ts';
import { readSetting, readSettings, unsetByDefault, withDefault } from './setting.ts';
import { nonNegativeInt, positiveInt } from './value-kinds.ts';

const interval = withDefault({ env: 'X_SECONDS', kind: nonNegativeInt, default: 7, description: 'd' });
const cap = unsetByDefault({ env: 'X_CAP', kind: positiveInt, defaultText: 'no cap', description: 'd' });

test('an unset, empty or blank variable takes the default', () => {
  assert.equal(readSetting(interval, {}), 7);
  assert.equal(readSetting(interval, { X_SECONDS: '' }), 7);
  assert.equal(readSetting(interval, { X_SECONDS: ' \t' }), 7);
  assert.equal(readSetting(cap, {}), undefined);
});

test('a given value is parsed by the setting kind', () => {
  assert.equal(readSetting(interval, { X_SECONDS: '0' }), 0);
  assert.equal(readSetting(cap, { X_CAP: '3' }), 3);
});

test('a bad value is a ConfigError naming the variable, what it must be and what it got', () => {
  assert.throws(
    () => readSetting(cap, { X_CAP: '0' }),
    (e: unknown) => e instanceof ConfigError && e.message === "X_CAP must be a positive integer, got '0'",
  );
});

test('the docs show the default as written unless the setting says otherwise', () => {
  assert.equal(interval.defaultText, '7');
  assert.equal(cap.defaultText, 'no cap');
  assert.equal(interval.upstream, false);
});

test('a table is read into values keyed as the table is', () => {
  assert.deepEqual(readSettings({ interval, cap }, { X_CAP: '2' }), { interval: 7, cap: 2 });
});
