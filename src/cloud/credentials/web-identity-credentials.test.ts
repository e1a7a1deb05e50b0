// IRSA against a local server playing STS's AssumeRoleWithWebIdentity.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { HttpTransport } from '../ec2-query/http-transport.ts';
import { regionalEndpoint } from '../ec2-query/regional-endpoint.ts';
import { type LocalHttpServer, startLocalHttpServer } from '../testing/local-http-server.ts';
import { CredentialsError } from './aws-credentials.ts';
import { webIdentityCredentialSource } from './web-identity-credentials.ts';

const ROLE = 'arn:aws:iam::111122223333:role/vpcnet-node';
let dir: string;
let sts: LocalHttpServer;
let stsAnswer: { status: number; body: string };
const transport = new HttpTransport({ requestTimeoutMs: 5_000 });

const assumed = (key: string, expiration: string) =>
  '<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">' +
  '<AssumeRoleWithWebIdentityResult><SubjectFromWebIdentityToken>system:serviceaccount:kube-system:aws-node' +
  '</SubjectFromWebIdentityToken><Credentials>' +
  `<AccessKeyId>${key}</AccessKeyId><SecretAccessKey>secret/+key</SecretAccessKey>` +
  `<SessionToken>FwoGZXIvYXdzE&amp;token</SessionToken><Expiration>${expiration}</Expiration>` +
  '</Credentials></AssumeRoleWithWebIdentityResult>' +
  '<ResponseMetadata><RequestId>ad4156e9-bce1-11e2-82e6-6b6efEXAMPLE</RequestId></ResponseMetadata>' +
  '</AssumeRoleWithWebIdentityResponse>';

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ec9-irsa-'));
  sts = await startLocalHttpServer(() => stsAnswer);
});

after(async () => {
  transport.close();
  await sts.close();
  await rm(dir, { recursive: true, force: true });
});

function source(extra: NodeJS.ProcessEnv = {}) {
  const tokenFile = join(dir, 'token');
  return {
    tokenFile,
    source: webIdentityCredentialSource(
      { AWS_WEB_IDENTITY_TOKEN_FILE: tokenFile, AWS_ROLE_ARN: ROLE, AWS_ENDPOINT_URL_STS: sts.url, ...extra },
      {
        transport,
        readFile: (p) => readFile(p, 'utf8'),
        region: 'us-west-2',
        now: () => 1234,
      },
    ),
  };
}

test('the token file is traded at STS for the role credentials, unsigned, and read again on each fetch', async () => {
  const { tokenFile, source: irsa } = source({ AWS_ROLE_SESSION_NAME: 'node-a' });
  assert.ok(irsa !== undefined);
  stsAnswer = { status: 200, body: assumed('ASIAFIRST', '2026-11-30T14:00:00Z') };
  await writeFile(tokenFile, 'eyJ.first.token\n');
  const first = await irsa.fetch();
  assert.deepEqual(first, {
    accessKeyId: 'ASIAFIRST',
    secretAccessKey: 'secret/+key',
    sessionToken: 'FwoGZXIvYXdzE&token',
    expiresAt: Date.parse('2026-11-30T14:00:00Z'),
  });
  const asked = new URLSearchParams(sts.requests.at(-1)?.body);
  assert.equal(sts.requests.at(-1)?.method, 'POST');
  assert.equal(
    sts.requests.at(-1)?.headers.authorization,
    undefined,
    'AssumeRoleWithWebIdentity is not signed',
  );
  assert.deepEqual(Object.fromEntries(asked), {
    Action: 'AssumeRoleWithWebIdentity',
    Version: '2011-06-15',
    RoleArn: ROLE,
    RoleSessionName: 'node-a',
    WebIdentityToken: 'eyJ.first.token',
  });

  // The kubelet rotates the projected token: the next fetch sends the new one.
  await writeFile(tokenFile, 'eyJ.second.token');
  stsAnswer = { status: 200, body: assumed('ASIASECOND', '2026-11-30T15:00:00Z') };
  assert.equal((await irsa.fetch()).accessKeyId, 'ASIASECOND');
  assert.equal(new URLSearchParams(sts.requests.at(-1)?.body).get('WebIdentityToken'), 'eyJ.second.token');
});

test('a session name is made up when AWS_ROLE_SESSION_NAME is unset', async () => {
  const { tokenFile, source: irsa } = source();
  await writeFile(tokenFile, 'tok');
  stsAnswer = { status: 200, body: assumed('ASIA3', '2026-11-30T14:00:00Z') };
  await irsa?.fetch();
  assert.equal(new URLSearchParams(sts.requests.at(-1)?.body).get('RoleSessionName'), 'vpcnet-1234');
});

test("STS's refusal is a non-retryable CredentialsError with its code; its 5xx is retryable", async () => {
  const { tokenFile, source: irsa } = source();
  await writeFile(tokenFile, 'tok');
  stsAnswer = {
    status: 400,
    body:
      '<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>' +
      '<Message>Incorrect token audience</Message></Error><RequestId>r</RequestId></ErrorResponse>',
  };
  const refused = await irsa?.fetch().catch((e: unknown) => e);
  assert.ok(refused instanceof CredentialsError);
  assert.equal(refused.retryable, false);
  assert.equal(
    refused.message,
    `cannot get AWS credentials from web identity (AWS_ROLE_ARN=${ROLE}): STS InvalidIdentityToken: Incorrect token audience`,
  );
  stsAnswer = { status: 503, body: '' };
  const down = await irsa?.fetch().catch((e: unknown) => e);
  assert.ok(down instanceof CredentialsError);
  assert.equal(down.retryable, true);
});

test('a missing token file is a CredentialsError naming the file', async () => {
  const irsa = webIdentityCredentialSource(
    { AWS_WEB_IDENTITY_TOKEN_FILE: join(dir, 'absent'), AWS_ROLE_ARN: ROLE, AWS_ENDPOINT_URL_STS: sts.url },
    {
      transport,
      readFile: () => Promise.reject(new Error('ENOENT: no such file')),
      region: 'us-west-2',
      now: Date.now,
    },
  );
  await assert.rejects(irsa?.fetch() ?? Promise.resolve(), {
    name: 'CredentialsError',
    message: new RegExp(`cannot read ${join(dir, 'absent')}: ENOENT`),
  });
});

test('without both AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN there is no web identity source', () => {
  const deps = { transport, readFile: () => Promise.resolve(''), region: 'us-west-2', now: Date.now };
  assert.equal(webIdentityCredentialSource({ AWS_ROLE_ARN: ROLE }, deps), undefined);
  assert.equal(webIdentityCredentialSource({ AWS_WEB_IDENTITY_TOKEN_FILE: '/t' }, deps), undefined);
});

test('the STS endpoint is the regional one unless AWS_ENDPOINT_URL_STS says otherwise', () => {
  assert.equal(regionalEndpoint('sts', 'eu-central-1').href, 'https://sts.eu-central-1.amazonaws.com/');
  assert.equal(regionalEndpoint('ec2', 'cn-north-1').href, 'https://ec2.cn-north-1.amazonaws.com.cn/');
  assert.throws(() => regionalEndpoint('sts', 'evil.example.com/'), /not an AWS region/);
});
