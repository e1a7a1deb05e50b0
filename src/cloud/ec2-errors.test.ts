import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CloudError } from './cloud.ts';
import { CredentialsError } from './credentials/aws-credentials.ts';
import { toCloudError } from './ec2-errors.ts';
import { HttpTimeoutError } from './ec2-query/http-transport.ts';
import { AwsServiceError } from './ec2-query/service-error.ts';

const ec2Error = (code: string, message: string, status: number) =>
  new AwsServiceError(code, message, status, 'req-1');

test('an EC2 error keeps its code and says what was being done', () => {
  const cause = ec2Error('AttachmentLimitExceeded', 'Interface count 4 exceeds the limit for m5.large', 400);
  const err = toCloudError('attach ENI eni-0a1 to i-0b2 at device index 2', cause);
  assert.equal(err.code, 'AttachmentLimitExceeded');
  assert.equal(err.retryable, false);
  assert.equal(
    err.message,
    'cannot attach ENI eni-0a1 to i-0b2 at device index 2: AttachmentLimitExceeded: ' +
      'Interface count 4 exceeds the limit for m5.large',
  );
  assert.equal(err.cause, cause);
});

test('throttling, server faults and HTTP 429 are retryable; not-found and auth failures are not', () => {
  const throttled = toCloudError(
    'assign 2 private IPs to ENI eni-1',
    ec2Error('RequestLimitExceeded', 'x', 503),
  );
  assert.equal(throttled.retryable, true);
  assert.equal(throttled.code, 'RequestLimitExceeded');
  assert.equal(toCloudError('d', ec2Error('RequestLimitExceeded', 'x', 400)).retryable, true);
  assert.equal(toCloudError('d', ec2Error('InternalError', 'x', 500)).retryable, true);
  assert.equal(toCloudError('d', ec2Error('SomethingNew', 'x', 502)).retryable, true);
  assert.equal(toCloudError('d', ec2Error('Http429', 'x', 429)).retryable, true);
  assert.equal(toCloudError('d', ec2Error('RequestExpired', 'clock skew', 400)).retryable, true);
  assert.equal(toCloudError('d', ec2Error('InvalidNetworkInterfaceID.NotFound', 'x', 400)).retryable, false);
  assert.equal(toCloudError('d', ec2Error('AuthFailure', 'x', 401)).retryable, false);
  assert.equal(toCloudError('d', ec2Error('UnauthorizedOperation', 'x', 403)).retryable, false);
});

test('a socket error or a timeout is retryable and named by its code', () => {
  const cause = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
  const err = toCloudError('delete ENI eni-1', cause);
  assert.equal(err.code, 'ECONNREFUSED');
  assert.equal(err.retryable, true);
  assert.equal(err.message, 'cannot delete ENI eni-1: ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:1');
  const timedOut = toCloudError(
    'delete ENI eni-1',
    new HttpTimeoutError('no answer within 10 ms', 'RequestTimeout'),
  );
  assert.deepEqual([timedOut.code, timedOut.retryable], ['RequestTimeout', true]);
  const noConnect = toCloudError('delete ENI eni-1', new HttpTimeoutError('cannot connect', 'ETIMEDOUT'));
  assert.deepEqual([noConnect.code, noConnect.retryable], ['ETIMEDOUT', true]);
});

test('missing credentials keep their code and retryability and say which call they stopped', () => {
  const err = toCloudError(
    'delete ENI eni-1',
    new CredentialsError('cannot get AWS credentials from the instance profile: IMDS 404', true),
  );
  assert.ok(err instanceof CredentialsError);
  assert.equal(err.code, 'CredentialsError');
  assert.equal(err.retryable, true);
  assert.equal(
    err.message,
    'cannot delete ENI eni-1: cannot get AWS credentials from the instance profile: IMDS 404',
  );
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
