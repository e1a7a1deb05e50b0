// The EC2 client's requests as a local server sees them, and what it does with the answers.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { AwsCredentials } from '../credentials/aws-credentials.ts';
import { type LocalHttpServer, startLocalHttpServer } from '../testing/local-http-server.ts';
import { Ec2QueryClient } from './ec2-query-client.ts';
import { HttpTransport } from './http-transport.ts';
import { AwsServiceError } from './service-error.ts';

let ec2: LocalHttpServer;
let answer: { status: number; body: string; date?: string };

before(async () => {
  ec2 = await startLocalHttpServer(() => answer);
});
after(() => ec2.close());

function client(credentials: AwsCredentials) {
  let invalidated = 0;
  const transport = new HttpTransport();
  const c = new Ec2QueryClient({
    endpoint: new URL(ec2.url),
    region: 'us-west-2',
    credentials: {
      get: () => Promise.resolve(credentials),
      invalidate: () => {
        invalidated++;
      },
    },
    transport,
    now: () => Date.parse('2026-11-30T12:00:00Z'),
  });
  return { client: c, invalidated: () => invalidated };
}

test('a call is a SigV4-signed form POST of Action, Version 2016-11-15 and the flattened parameters', async () => {
  answer = {
    status: 200,
    body: '<DeleteNetworkInterfaceResponse><return>true</return></DeleteNetworkInterfaceResponse>',
  };
  const { client: c } = client({ accessKeyId: 'ASIATEMP', secretAccessKey: 's', sessionToken: 'tok' });
  try {
    const reply = await c.call('UnassignPrivateIpAddresses', {
      NetworkInterfaceId: 'eni-1',
      PrivateIpAddress: ['10.0.0.7', '10.0.0.8'],
    });
    assert.equal(reply.bool('return'), true);
    const req = ec2.requests.at(-1);
    assert.equal(req?.method, 'POST');
    assert.equal(req?.path, '/');
    assert.equal(req?.headers['content-type'], 'application/x-www-form-urlencoded; charset=utf-8');
    assert.equal(
      req?.body,
      'Action=UnassignPrivateIpAddresses&Version=2016-11-15&NetworkInterfaceId=eni-1' +
        '&PrivateIpAddress.1=10.0.0.7&PrivateIpAddress.2=10.0.0.8',
    );
    assert.equal(req?.headers['x-amz-date'], '20261130T120000Z');
    assert.equal(req?.headers['x-amz-security-token'], 'tok');
    assert.match(
      String(req?.headers.authorization),
      /^AWS4-HMAC-SHA256 Credential=ASIATEMP\/20261130\/us-west-2\/ec2\/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature=[0-9a-f]{64}$/,
    );
  } finally {
    c.close();
  }
});

test("EC2's error answer is thrown as an AwsServiceError; a credentials refusal makes the next call fetch new ones", async () => {
  const { client: c, invalidated } = client({ accessKeyId: 'AKID', secretAccessKey: 's' });
  try {
    answer = {
      status: 400,
      body: '<Response><Errors><Error><Code>InvalidAttachmentID.NotFound</Code><Message>gone</Message></Error></Errors><RequestID>r1</RequestID></Response>',
    };
    const notFound = await c
      .call('DetachNetworkInterface', { AttachmentId: 'eni-attach-1' })
      .catch((e: unknown) => e);
    assert.ok(notFound instanceof AwsServiceError);
    assert.deepEqual(
      [notFound.code, notFound.status, notFound.requestId],
      ['InvalidAttachmentID.NotFound', 400, 'r1'],
    );
    assert.equal(invalidated(), 0);
    answer = {
      status: 401,
      body: '<Response><Errors><Error><Code>AuthFailure</Code><Message>not valid</Message></Error></Errors></Response>',
    };
    await assert.rejects(c.call('DescribeSubnets', {}), { code: 'AuthFailure' });
    assert.equal(invalidated(), 1);
  } finally {
    c.close();
  }
});

test('calls reuse one kept-alive connection', async () => {
  answer = { status: 200, body: '<R/>' };
  const { client: c } = client({ accessKeyId: 'AKID', secretAccessKey: 's' });
  const before = ec2.connections();
  try {
    for (let i = 0; i < 5; i++) await c.call('DescribeSubnets', {});
    assert.equal(ec2.connections() - before, 1);
  } finally {
    c.close();
  }
});

test("a node clock far off EC2's is corrected by EC2's Date header from the next call on", async () => {
  // The client's clock says 12:00:00; EC2 answers that it is 12:30:00.
  const { client: c } = client({ accessKeyId: 'AKID', secretAccessKey: 's' });
  try {
    answer = {
      status: 400,
      date: 'Mon, 30 Nov 2026 12:30:00 GMT',
      body: '<Response><Errors><Error><Code>RequestExpired</Code><Message>Request has expired.</Message></Error></Errors></Response>',
    };
    await assert.rejects(c.call('DescribeSubnets', {}), { code: 'RequestExpired' });
    assert.equal(ec2.requests.at(-1)?.headers['x-amz-date'], '20261130T120000Z');
    answer = { status: 200, date: 'Mon, 30 Nov 2026 12:30:00 GMT', body: '<R/>' };
    await c.call('DescribeSubnets', {});
    assert.equal(ec2.requests.at(-1)?.headers['x-amz-date'], '20261130T123000Z');
    // A server clock within a few minutes of ours is trusted less than our own: no correction.
    answer = { status: 200, date: 'Mon, 30 Nov 2026 12:02:00 GMT', body: '<R/>' };
    await c.call('DescribeSubnets', {});
    await c.call('DescribeSubnets', {});
    assert.equal(ec2.requests.at(-1)?.headers['x-amz-date'], '20261130T120000Z');
  } finally {
    c.close();
  }
});
