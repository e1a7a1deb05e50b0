// SigV4 against AWS's published examples (the signing docs' IAM ListUsers request and requests of
// the aws-sig-v4-test-suite), all signed with the documentation's AKIDEXAMPLE key at
// 2015-08-30T12:36:00Z. The expected signatures are AWS's, not values this code produced.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { amzDateOf, signRequest } from './sigv4.ts';

const EXAMPLE_KEY = {
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
};
const AT = new Date('2015-08-30T12:36:00Z');
const SUITE_SCOPE = { region: 'us-east-1', service: 'service' };
/** The example session token of the aws-sig-v4-test-suite (post-sts-token). */
const SUITE_SESSION_TOKEN =
  'AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfK' +
  'D8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8' +
  'Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3i' +
  'SIlTJabIQwj2ICCR/oLxBA==';

test('the IAM ListUsers example of the SigV4 documentation gets its published signature', () => {
  const headers = signRequest(
    {
      method: 'GET',
      url: new URL('https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08'),
      headers: { 'Content-Type': 'application/x-www-form-urlencoded; charset=utf-8' },
      body: '',
    },
    EXAMPLE_KEY,
    { region: 'us-east-1', service: 'iam' },
    AT,
  );
  assert.equal(
    headers.authorization,
    'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, ' +
      'SignedHeaders=content-type;host;x-amz-date, ' +
      'Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7',
  );
  assert.equal(headers['x-amz-date'], '20150830T123600Z');
  assert.equal(headers.host, 'iam.amazonaws.com');
});

test('a form-encoded POST body is signed as the test suite publishes (post-x-www-form-urlencoded)', () => {
  const headers = signRequest(
    {
      method: 'POST',
      url: new URL('https://example.amazonaws.com/'),
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'Param1=value1',
    },
    EXAMPLE_KEY,
    SUITE_SCOPE,
    AT,
  );
  assert.match(
    headers.authorization ?? '',
    /SignedHeaders=content-type;host;x-amz-date, Signature=ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a$/,
  );
});

test('get-vanilla and its reordered query string get the suite signatures', () => {
  const sign = (url: string) =>
    signRequest({ method: 'GET', url: new URL(url), headers: {}, body: '' }, EXAMPLE_KEY, SUITE_SCOPE, AT)
      .authorization;
  assert.match(
    sign('https://example.amazonaws.com/') ?? '',
    /Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31$/,
  );
  // get-vanilla-query-order-key-case: parameters are sorted before signing.
  assert.match(
    sign('https://example.amazonaws.com/?Param2=value2&Param1=value1') ?? '',
    /Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500$/,
  );
});

test('a session token is sent as x-amz-security-token and signed (post-sts-header-before)', () => {
  const headers = signRequest(
    { method: 'POST', url: new URL('https://example.amazonaws.com/'), headers: {}, body: '' },
    { ...EXAMPLE_KEY, sessionToken: SUITE_SESSION_TOKEN },
    SUITE_SCOPE,
    AT,
  );
  assert.equal(headers['x-amz-security-token'], SUITE_SESSION_TOKEN);
  assert.equal(
    headers.authorization,
    'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, ' +
      'SignedHeaders=host;x-amz-date;x-amz-security-token, ' +
      'Signature=85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead',
  );
});

test('the signing time is written as x-amz-date in basic ISO 8601, UTC, without fractions', () => {
  assert.equal(amzDateOf(new Date('2026-11-30T09:05:07.891Z')), '20261130T090507Z');
});
