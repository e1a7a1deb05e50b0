import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  CNI_ERR_CHECK_DRIFT,
  CNI_ERR_CONTAINER_UNKNOWN,
  CNI_ERR_DECODE,
  CNI_ERR_INCOMPATIBLE_VERSION,
  CNI_ERR_INTERNAL,
  CNI_ERR_INVALID_ENV,
  CNI_ERR_INVALID_NETCONF,
  CNI_ERR_IO,
  CNI_ERR_PLUGIN_NOT_AVAILABLE,
  CNI_ERR_PLUGIN_NOT_AVAILABLE_DISRUPTED,
  CNI_ERR_TRY_AGAIN_LATER,
  CNI_ERR_UNSUPPORTED_FIELD,
  CniError,
} from './errors.ts';

test('error code constants carry the numbers the CNI spec assigns', () => {
  assert.deepEqual(
    [
      CNI_ERR_INCOMPATIBLE_VERSION,
      CNI_ERR_UNSUPPORTED_FIELD,
      CNI_ERR_CONTAINER_UNKNOWN,
      CNI_ERR_INVALID_ENV,
      CNI_ERR_IO,
      CNI_ERR_DECODE,
      CNI_ERR_INVALID_NETCONF,
      CNI_ERR_TRY_AGAIN_LATER,
      CNI_ERR_PLUGIN_NOT_AVAILABLE,
      CNI_ERR_PLUGIN_NOT_AVAILABLE_DISRUPTED,
    ],
    [1, 2, 3, 4, 5, 6, 7, 11, 50, 51],
  );
  assert.ok(CNI_ERR_INTERNAL >= 100 && CNI_ERR_CHECK_DRIFT >= 100, 'plugin-specific codes start at 100');
});

test('toJson produces the spec error object stamped with the requested version', () => {
  const err = new CniError(CNI_ERR_TRY_AGAIN_LATER, 'agent down', 'ECONNREFUSED');
  assert.deepEqual(err.toJson('0.4.0'), {
    cniVersion: '0.4.0',
    code: 11,
    msg: 'agent down',
    details: 'ECONNREFUSED',
  });
});

test('toJson leaves details out when there are none', () => {
  const json = new CniError(CNI_ERR_IO, 'disk full').toJson('1.0.0');
  assert.equal('details' in json, false);
  assert.equal(JSON.stringify(json), '{"cniVersion":"1.0.0","code":5,"msg":"disk full"}');
});

test('CniError is an Error whose message joins msg and details for logs', () => {
  const err = new CniError(CNI_ERR_INVALID_ENV, 'CNI_IFNAME is required', 'ADD');
  assert.ok(err instanceof Error);
  assert.equal(err.message, 'CNI_IFNAME is required: ADD');
  assert.equal(err.code, 4);
});
