import assert from 'node:assert/strict';
import { test } from 'node:test';
import { labTimeout, labTimeoutScale } from './timeouts.ts';

test('lab timeouts stay as written unless VPCNET_LAB_TIMEOUT_SCALE stretches them', () => {
  assert.equal(labTimeout(10_000, {}), 10_000);
  assert.equal(labTimeout(10_000, { VPCNET_LAB_TIMEOUT_SCALE: '' }), 10_000);
  assert.equal(labTimeout(60_000, { VPCNET_LAB_TIMEOUT_SCALE: '4' }), 240_000);
  assert.equal(labTimeout(2000, { VPCNET_LAB_TIMEOUT_SCALE: '2.5' }), 5000);
});

test('a scale that is not a number of at least 1 is refused, naming the variable', () => {
  for (const bad of ['0', '0.5', '-2', 'fast', 'Infinity']) {
    assert.throws(
      () => labTimeoutScale({ VPCNET_LAB_TIMEOUT_SCALE: bad }),
      /VPCNET_LAB_TIMEOUT_SCALE=.*at least 1/,
    );
  }
});
