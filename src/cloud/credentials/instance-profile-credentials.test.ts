// The instance profile's credentials through IMDSv2, against a local server playing IMDS.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ImdsClient } from '../imds.ts';
import { type LocalHttpServer, startLocalHttpServer } from '../testing/local-http-server.ts';
import { CredentialsError } from './aws-credentials.ts';
import { instanceProfileCredentialSource } from './instance-profile-credentials.ts';

let imds: LocalHttpServer;
let roles: string;
let roleDocument: { status: number; body: string };

before(async () => {
  imds = await startLocalHttpServer((req) => {
    if (req.method === 'PUT' && req.path === '/latest/api/token') return { body: 'imds-session-token' };
    if (req.headers['x-aws-ec2-metadata-token'] !== 'imds-session-token') return { status: 401 };
    if (req.path === '/latest/meta-data/iam/security-credentials/') {
      return roles === '' ? { status: 404 } : { body: roles };
    }
    if (req.path === '/latest/meta-data/iam/security-credentials/eks-node-role') return roleDocument;
    return { status: 404 };
  });
});

after(() => imds.close());

const source = () => instanceProfileCredentialSource(new ImdsClient({ endpoint: imds.url, attempts: 1 }));

test('the role named by IMDS is read with a session token and its Expiration kept', async () => {
  roles = 'eks-node-role\n';
  roleDocument = {
    status: 200,
    body: JSON.stringify({
      Code: 'Success',
      LastUpdated: '2026-11-30T13:00:00Z',
      Type: 'AWS-HMAC',
      AccessKeyId: 'ASIANODE',
      SecretAccessKey: 'node-secret',
      Token: 'node-token',
      Expiration: '2026-11-30T19:00:00Z',
    }),
  };
  assert.deepEqual(await source().fetch(), {
    accessKeyId: 'ASIANODE',
    secretAccessKey: 'node-secret',
    sessionToken: 'node-token',
    expiresAt: Date.parse('2026-11-30T19:00:00Z'),
  });
});

test('an instance without a profile is a CredentialsError that says so', async () => {
  roles = '';
  const err = await source()
    .fetch()
    .catch((e: unknown) => e);
  assert.ok(err instanceof CredentialsError);
  assert.match(err.message, /404.*does the instance have an instance profile\?/);
});

test('a document whose Code is not Success is a CredentialsError carrying the code', async () => {
  roles = 'eks-node-role';
  roleDocument = {
    status: 200,
    body: JSON.stringify({ Code: 'AssumeRoleUnauthorizedAccess', Message: 'denied' }),
  };
  await assert.rejects(source().fetch(), {
    name: 'CredentialsError',
    message: 'IMDS role eks-node-role answered AssumeRoleUnauthorizedAccess: denied',
  });
  roleDocument = { status: 200, body: JSON.stringify({ Code: 'Success', AccessKeyId: 'A' }) };
  await assert.rejects(source().fetch(), /without AccessKeyId and SecretAccessKey/);
});
