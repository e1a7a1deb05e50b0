import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HttpTransport } from '../ec2-query/http-transport.ts';
import { ImdsClient } from '../imds.ts';
import { credentialSourceFromEnv } from './credential-chain.ts';

const deps = {
  transport: new HttpTransport(),
  imds: new ImdsClient({ endpoint: 'http://127.0.0.1:9' }),
  region: 'us-west-2',
};
const KEYS = { AWS_ACCESS_KEY_ID: 'AKIDENV', AWS_SECRET_ACCESS_KEY: 'env-secret' };
const IRSA = {
  AWS_WEB_IDENTITY_TOKEN_FILE: '/var/run/secrets/eks.amazonaws.com/serviceaccount/token',
  AWS_ROLE_ARN: 'arn:aws:iam::1:role/r',
};
const POD_IDENTITY = { AWS_CONTAINER_CREDENTIALS_FULL_URI: 'http://169.254.170.23/v1/credentials' };

test('sources are chosen in the SDK order: env keys, web identity, container, instance profile', () => {
  const name = (env: NodeJS.ProcessEnv) => credentialSourceFromEnv(env, deps).name;
  assert.equal(name({ ...KEYS, ...IRSA, ...POD_IDENTITY }), 'environment (AWS_ACCESS_KEY_ID)');
  assert.equal(name({ ...IRSA, ...POD_IDENTITY }), 'web identity (AWS_ROLE_ARN=arn:aws:iam::1:role/r)');
  assert.equal(name(POD_IDENTITY), 'container credentials (http://169.254.170.23/v1/credentials)');
  assert.equal(name({}), 'instance profile (IMDS 127.0.0.1:9)');
  assert.equal(
    name({ AWS_ACCESS_KEY_ID: 'AKIDONLY' }),
    'instance profile (IMDS 127.0.0.1:9)',
    'half a key pair is no source',
  );
});

test('env keys carry AWS_SESSION_TOKEN when it is set', async () => {
  assert.deepEqual(await credentialSourceFromEnv({ ...KEYS, AWS_SESSION_TOKEN: 'sess' }, deps).fetch(), {
    accessKeyId: 'AKIDENV',
    secretAccessKey: 'env-secret',
    sessionToken: 'sess',
  });
  assert.deepEqual(await credentialSourceFromEnv(KEYS, deps).fetch(), {
    accessKeyId: 'AKIDENV',
    secretAccessKey: 'env-secret',
  });
});
