import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readServiceError } from './service-error.ts';

test("EC2's error document gives its code, message, status and request ID", () => {
  const err = readServiceError(
    400,
    '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>InvalidNetworkInterfaceID.NotFound</Code>' +
      "<Message>The networkInterface ID 'eni-0dead' does not exist &amp; never did</Message></Error></Errors>" +
      '<RequestID>ea966190-f9aa-478e-9ede-example</RequestID></Response>',
  );
  assert.equal(err.code, 'InvalidNetworkInterfaceID.NotFound');
  assert.equal(err.message, "The networkInterface ID 'eni-0dead' does not exist & never did");
  assert.equal(err.status, 400);
  assert.equal(err.requestId, 'ea966190-f9aa-478e-9ede-example');
});

test("STS's error document (ErrorResponse) reads the same way", () => {
  const err = readServiceError(
    403,
    '<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type>' +
      '<Code>InvalidIdentityToken</Code><Message>No OpenIDConnect provider found</Message></Error>' +
      '<RequestId>c6104cbe-af31-11e0-8154-cbc7ccf896c7</RequestId></ErrorResponse>',
  );
  assert.equal(err.code, 'InvalidIdentityToken');
  assert.equal(err.message, 'No OpenIDConnect provider found');
  assert.equal(err.requestId, 'c6104cbe-af31-11e0-8154-cbc7ccf896c7');
});

test('a body that is no error document is named by its HTTP status, with an excerpt', () => {
  const err = readServiceError(503, '<html><body>\n  Service Temporarily Unavailable\n</body></html>');
  assert.equal(err.code, 'Http503');
  assert.equal(err.status, 503);
  assert.match(err.message, /^HTTP 503 without an AWS error document: <html><body> Service Temporarily/);
  assert.equal(readServiceError(502, '').message, 'HTTP 502 without an AWS error document');
});
