import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { HttpTransport } from '../ec2-query/http-transport.ts';
import { ImdsClient } from '../imds.ts';
import { CredentialsError } from './aws-credentials.ts';
import { type CredentialChainDeps, credentialSourceFromEnv } from './credential-chain.ts';

let home: string;
/** A home without ~/.aws: no shared files. */
let bareHome: string;
let deps: CredentialChainDeps;
const KEYS = { AWS_ACCESS_KEY_ID: 'AKIDENV', AWS_SECRET_ACCESS_KEY: 'env-secret' };
const IRSA = {
  AWS_WEB_IDENTITY_TOKEN_FILE: '/var/run/secrets/eks.amazonaws.com/serviceaccount/token',
  AWS_ROLE_ARN: 'arn:aws:iam::1:role/r',
};
const POD_IDENTITY = { AWS_CONTAINER_CREDENTIALS_FULL_URI: 'http://169.254.170.23/v1/credentials' };

before(async () => {
  home = await mkdtemp(join(tmpdir(), 'vpcnet-chain-'));
  bareHome = await mkdtemp(join(tmpdir(), 'vpcnet-chain-bare-'));
  await writeFile(
    join(home, 'credentials'),
    '[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = default-secret\n\n' +
      '[ops]\naws_access_key_id = AKIDOPS\naws_secret_access_key = ops-secret\n',
  );
  await writeFile(join(home, 'config'), '[profile regional]\nregion = eu-west-1\n');
  deps = {
    transport: new HttpTransport(),
    imds: new ImdsClient({ endpoint: 'http://127.0.0.1:9' }),
    region: 'us-west-2',
    home: bareHome,
  };
});
after(async () => {
  deps.transport.close();
  await rm(home, { recursive: true, force: true });
  await rm(bareHome, { recursive: true, force: true });
});

const FILES = () => ({
  AWS_SHARED_CREDENTIALS_FILE: join(home, 'credentials'),
  AWS_CONFIG_FILE: join(home, 'config'),
});
const name = async (env: NodeJS.ProcessEnv, extra: Partial<CredentialChainDeps> = {}) =>
  (await credentialSourceFromEnv(env, { ...deps, ...extra })).name;

test('sources are chosen in the SDK order: env keys, web identity, container, instance profile', async () => {
  assert.equal(await name({ ...KEYS, ...IRSA, ...POD_IDENTITY }), 'environment (AWS_ACCESS_KEY_ID)');
  assert.equal(await name({ ...IRSA, ...POD_IDENTITY }), 'web identity (AWS_ROLE_ARN=arn:aws:iam::1:role/r)');
  assert.equal(await name(POD_IDENTITY), 'container credentials (http://169.254.170.23/v1/credentials)');
  assert.equal(await name({}), 'instance profile (IMDS 127.0.0.1:9)');
  assert.equal(
    await name({ AWS_ACCESS_KEY_ID: 'AKIDONLY' }),
    'instance profile (IMDS 127.0.0.1:9)',
    'half a key pair is no source',
  );
});

test("the shared files' default profile comes after env keys and IRSA, before container credentials", async () => {
  const files = FILES();
  assert.equal(await name({ ...files, ...KEYS }), 'environment (AWS_ACCESS_KEY_ID)');
  assert.equal(await name({ ...files, ...IRSA }), 'web identity (AWS_ROLE_ARN=arn:aws:iam::1:role/r)');
  assert.equal(
    await name({ ...files, ...POD_IDENTITY }),
    `profile default (${files.AWS_SHARED_CREDENTIALS_FILE})`,
  );
  assert.deepEqual(await (await credentialSourceFromEnv(files, deps)).fetch(), {
    accessKeyId: 'AKIDDEFAULT',
    secretAccessKey: 'default-secret',
  });
});

test('a profile AWS_PROFILE names wins over env keys and IRSA, as in the SDK for Go v2', async () => {
  const env = { ...FILES(), ...KEYS, ...IRSA, AWS_PROFILE: 'ops' };
  assert.equal(await name(env), `profile ops (${env.AWS_SHARED_CREDENTIALS_FILE})`);
  assert.deepEqual(await (await credentialSourceFromEnv(env, deps)).fetch(), {
    accessKeyId: 'AKIDOPS',
    secretAccessKey: 'ops-secret',
  });
});

test('a named profile without credentials leaves container credentials, then the instance profile', async () => {
  const env = { ...FILES(), ...KEYS, AWS_PROFILE: 'regional' };
  assert.equal(
    await name({ ...env, ...POD_IDENTITY }),
    'container credentials (http://169.254.170.23/v1/credentials)',
  );
  assert.equal(await name(env), 'instance profile (IMDS 127.0.0.1:9)');
});

test('AWS_EC2_METADATA_DISABLED: the instance profile is never the source; with nothing else, start is refused', async () => {
  assert.equal(
    await name(POD_IDENTITY, { metadataDisabled: true }),
    'container credentials (http://169.254.170.23/v1/credentials)',
  );
  await assert.rejects(
    credentialSourceFromEnv({}, { ...deps, metadataDisabled: true }),
    (err: unknown) =>
      err instanceof CredentialsError &&
      /AWS_EC2_METADATA_DISABLED=true rules out the instance profile/.test(err.message) &&
      /AWS_PROFILE/.test(err.message),
  );
});

test('env keys carry AWS_SESSION_TOKEN when it is set', async () => {
  assert.deepEqual(
    await (await credentialSourceFromEnv({ ...KEYS, AWS_SESSION_TOKEN: 'sess' }, deps)).fetch(),
    {
      accessKeyId: 'AKIDENV',
      secretAccessKey: 'env-secret',
      sessionToken: 'sess',
    },
  );
  assert.deepEqual(await (await credentialSourceFromEnv(KEYS, deps)).fetch(), {
    accessKeyId: 'AKIDENV',
    secretAccessKey: 'env-secret',
  });
});
