import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  falseOnly,
  httpUrl,
  intBetween,
  matching,
  nonNegativeInt,
  oneOf,
  positiveInt,
  positiveNumber,
  trueOrFalse,
} from './value-kinds.ts';

test('integers are digits only, may carry surrounding whitespace, and must be safe', () => {
  assert.equal(nonNegativeInt.parse('0'), 0);
  assert.equal(nonNegativeInt.parse(' 12 '), 12);
  for (const bad of ['-1', '1.5', '1e3', '0x10', '30s', '99999999999999999999']) {
    assert.equal(nonNegativeInt.parse(bad), undefined, bad);
  }
  assert.equal(positiveInt.parse('0'), undefined);
  assert.equal(positiveInt.parse('1'), 1);
});

test('a range includes its bounds and says them', () => {
  const mtu = intBetween(576, 9001);
  assert.equal(mtu.parse('576'), 576);
  assert.equal(mtu.parse('9001'), 9001);
  assert.equal(mtu.parse('575'), undefined);
  assert.equal(mtu.what, 'an integer between 576 and 9001');
});

test('booleans are exactly true or false', () => {
  assert.equal(trueOrFalse.parse('true'), true);
  assert.equal(trueOrFalse.parse('false'), false);
  for (const bad of ['True', 'yes', '1']) assert.equal(trueOrFalse.parse(bad), undefined, bad);
  const refused = falseOnly('not built yet');
  assert.equal(refused.parse('false'), false);
  assert.equal(refused.parse('true'), undefined);
  assert.equal(refused.what, 'false (not built yet)');
});

test('an enum accepts its words only and lists them', () => {
  const level = oneOf(['debug', 'info', 'warn', 'error']);
  assert.equal(level.parse('warn'), 'warn');
  assert.equal(level.parse('WARN'), undefined);
  assert.equal(level.what, 'debug, info, warn or error');
  assert.equal(oneOf(['vlan', 'macvlan']).what, 'vlan or macvlan');
});

test('URLs must be http(s) and well formed, and lose trailing slashes', () => {
  assert.equal(httpUrl.parse('http://10.0.255.254:6443/'), 'http://10.0.255.254:6443');
  assert.equal(httpUrl.parse('https://api.example'), 'https://api.example');
  for (const bad of ['ftp://x', 'api.example', 'http://']) assert.equal(httpUrl.parse(bad), undefined, bad);
});

test('patterned text must match its pattern', () => {
  const prefix = matching(/^[a-z]{1,3}$/, '1-3 letters');
  assert.equal(prefix.parse('abc'), 'abc');
  assert.equal(prefix.parse('abcd'), undefined);
});

test('a positive number may have a fraction, nothing else', () => {
  assert.equal(positiveNumber.parse('0.05'), 0.05);
  assert.equal(positiveNumber.parse(' 2 '), 2);
  assert.equal(positiveNumber.parse('.5'), 0.5);
  for (const bad of ['0', '0.0', '-1', '1e3', 'Infinity', 'NaN', '1,5', '']) {
    assert.equal(positiveNumber.parse(bad), undefined, bad);
  }
});
