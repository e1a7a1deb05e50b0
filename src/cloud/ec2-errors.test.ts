import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EC2ServiceException } from '@aws-sdk/client-ec2';
import { CloudError } from './cloud.ts';
import { toCloudError } from './ec2-errors.ts';

function ec2Exception(code: string, message: string, status: number, attempts = 1): EC2ServiceException {
  return new EC2ServiceException({
    name: code,
    message,
    $fault: status >= 500 ? 'server' : 'client',
    $metadata: { httpStatusCode: status, attempts },
  });
}

test('an EC2 error keeps its code and says what was being done', () => {
  const err = toCloudError(
    'attach ENI eni-0a1 to i-0b2 at device index 2',
    ec2Exception('AttachmentLimitExceeded', 'Interface count 4 exceeds the limit for m5.large', 400),
  );
  assert.equal(err.code, 'AttachmentLimitExceeded');
  assert.equal(err.retryable, false);
  assert.equal(
    err.message,
    'cannot attach ENI eni-0a1 to i-0b2 at device index 2: AttachmentLimitExceeded: ' +
      'Interface count 4 exceeds the limit for m5.large',
  );
  assert.ok(err.cause instanceof EC2ServiceException);
});

test('throttling and server faults are retryable and report how many attempts the SDK made', () => {
  const throttled = toCloudError(
    'assign 2 private IPs to ENI eni-1',
    ec2Exception('RequestLimitExceeded', 'x', 503, 3),
  );
  assert.equal(throttled.retryable, true);
  assert.match(throttled.message, /\(after 3 attempts\)$/);
  assert.equal(toCloudError('d', ec2Exception('InternalError', 'x', 500)).retryable, true);
  assert.equal(toCloudError('d', ec2Exception('SomethingNew', 'x', 502)).retryable, true);
  assert.equal(
    toCloudError('d', ec2Exception('InvalidNetworkInterfaceID.NotFound', 'x', 400)).retryable,
    false,
  );
});

test('a socket error is retryable and named by its errno code', () => {
  const cause = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
  const err = toCloudError('delete ENI eni-1', cause);
  assert.equal(err.code, 'ECONNREFUSED');
  assert.equal(err.retryable, true);
  assert.equal(err.message, 'cannot delete ENI eni-1: ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:1');
});

test('an unrecognised failure is not retryable and keeps its text', () => {
  const err = toCloudError('delete ENI eni-1', new TypeError('boom'));
  assert.equal(err.code, 'Unknown');
  assert.equal(err.retryable, false);
  assert.equal(err.message, 'cannot delete ENI eni-1: TypeError: boom');
});

test('a CloudError passes through unchanged', () => {
  const original = new CloudError('already mapped', 'X', true);
  assert.equal(toCloudError('anything', original), original);
});
