// EKS Pod Identity style container credentials against a local server playing the agent.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { HttpTransport } from '../ec2-query/http-transport.ts';
import { type LocalHttpServer, startLocalHttpServer } from '../testing/local-http-server.ts';
import { CredentialsError } from './aws-credentials.ts';
import { containerCredentialSource } from './container-credentials.ts';

let dir: string;
let agent: LocalHttpServer;
let agentAnswer: { status: number; body: string };
const transport = new HttpTransport({ requestTimeoutMs: 5_000 });
const deps = { transport, readFile: (p: string) => readFile(p, 'utf8') };

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ec9-podid-'));
  agent = await startLocalHttpServer(() => agentAnswer);
});

after(async () => {
  transport.close();
  await agent.close();
  await rm(dir, { recursive: true, force: true });
});

const document = (key: string) =>
  JSON.stringify({
    AccessKeyId: key,
    SecretAccessKey: 'pod-secret',
    Token: 'pod-token',
    AccountId: '111122223333',
    Expiration: '2026-11-30T20:00:00Z',
  });

test('the full URI is asked with the token file as Authorization, read again on every fetch', async () => {
  const tokenFile = join(dir, 'eks-pod-identity-token');
  const source = containerCredentialSource(
    {
      AWS_CONTAINER_CREDENTIALS_FULL_URI: `${agent.url}/v1/credentials`,
      AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: tokenFile,
      AWS_CONTAINER_AUTHORIZATION_TOKEN: 'ignored-when-a-file-is-set',
    },
    deps,
  );
  assert.ok(source !== undefined);
  await writeFile(tokenFile, 'sa-token-1\n');
  agentAnswer = { status: 200, body: document('ASIAPOD1') };
  assert.deepEqual(await source.fetch(), {
    accessKeyId: 'ASIAPOD1',
    secretAccessKey: 'pod-secret',
    sessionToken: 'pod-token',
    expiresAt: Date.parse('2026-11-30T20:00:00Z'),
  });
  assert.equal(agent.requests.at(-1)?.method, 'GET');
  assert.equal(agent.requests.at(-1)?.path, '/v1/credentials');
  assert.equal(agent.requests.at(-1)?.headers.authorization, 'sa-token-1');
  await writeFile(tokenFile, 'sa-token-2');
  await source.fetch();
  assert.equal(agent.requests.at(-1)?.headers.authorization, 'sa-token-2');
});

test('AWS_CONTAINER_AUTHORIZATION_TOKEN is sent when there is no token file', async () => {
  const source = containerCredentialSource(
    {
      AWS_CONTAINER_CREDENTIALS_FULL_URI: `${agent.url}/creds`,
      AWS_CONTAINER_AUTHORIZATION_TOKEN: 'Basic abc',
    },
    deps,
  );
  agentAnswer = { status: 200, body: document('ASIAPOD3') };
  assert.equal((await source?.fetch())?.accessKeyId, 'ASIAPOD3');
  assert.equal(agent.requests.at(-1)?.headers.authorization, 'Basic abc');
});

test("the agent's refusal and its outage are CredentialsErrors, only the outage retryable", async () => {
  const source = containerCredentialSource(
    { AWS_CONTAINER_CREDENTIALS_FULL_URI: `${agent.url}/creds` },
    deps,
  );
  agentAnswer = {
    status: 400,
    body: '{"code":"InvalidToken","message":"Service account token cannot be empty"}',
  };
  const refused = await source?.fetch().catch((e: unknown) => e);
  assert.ok(refused instanceof CredentialsError);
  assert.equal(refused.retryable, false);
  assert.match(refused.message, /HTTP 400: .*Service account token cannot be empty/);
  agentAnswer = { status: 500, body: 'oops' };
  const down = await source?.fetch().catch((e: unknown) => e);
  assert.ok(down instanceof CredentialsError);
  assert.equal(down.retryable, true);
});

test('plain HTTP to an address other than loopback or the ECS/EKS agents is refused at start', () => {
  assert.throws(
    () => containerCredentialSource({ AWS_CONTAINER_CREDENTIALS_FULL_URI: 'http://10.0.0.5/creds' }, deps),
    /must be https, loopback, or the ECS or EKS Pod Identity agent address/,
  );
  for (const ok of [
    'http://169.254.170.23/v1/credentials',
    'http://[fd00:ec2::23]/v1/credentials',
    'https://creds.example.com/x',
    'http://127.0.0.2:8080/',
  ]) {
    assert.ok(containerCredentialSource({ AWS_CONTAINER_CREDENTIALS_FULL_URI: ok }, deps), ok);
  }
});

test('a relative URI (ECS) is asked under 169.254.170.2, and no variable means no source', () => {
  const ecs = containerCredentialSource(
    { AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: '/v2/credentials/abc' },
    deps,
  );
  assert.equal(ecs?.name, 'container credentials (http://169.254.170.2/v2/credentials/abc)');
  assert.equal(containerCredentialSource({}, deps), undefined);
});
