// Credentials from a profile of the shared files, as aws-node's SDK reads them: static keys, a web
// identity traded at STS (a local server plays it), refusals for what vpcnet has no client for.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { HttpTransport } from '../ec2-query/http-transport.ts';
import { type LocalHttpServer, startLocalHttpServer } from '../testing/local-http-server.ts';
import { CredentialsError } from './aws-credentials.ts';
import { profileCredentialSource } from './profile-credentials.ts';

let dir: string;
let sts: LocalHttpServer;
const transport = new HttpTransport({ requestTimeoutMs: 5_000 });

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vpcnet-profile-'));
  sts = await startLocalHttpServer(() => ({
    status: 200,
    body:
      '<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>' +
      '<AccessKeyId>ASIAPROFILE</AccessKeyId><SecretAccessKey>s</SecretAccessKey><SessionToken>t</SessionToken>' +
      '<Expiration>2030-01-01T00:00:00Z</Expiration></Credentials></AssumeRoleWithWebIdentityResult>' +
      '</AssumeRoleWithWebIdentityResponse>',
  }));
});
after(async () => {
  transport.close();
  await sts.close();
  await rm(dir, { recursive: true, force: true });
});

/** Writes the two files and resolves the profile source for `env` (the files' paths added). */
async function resolve(files: { credentials?: string; config?: string }, env: NodeJS.ProcessEnv) {
  const credentials = join(dir, `credentials-${Math.random()}`);
  const config = join(dir, `config-${Math.random()}`);
  if (files.credentials !== undefined) await writeFile(credentials, files.credentials);
  if (files.config !== undefined) await writeFile(config, files.config);
  return profileCredentialSource(
    {
      AWS_SHARED_CREDENTIALS_FILE: credentials,
      AWS_CONFIG_FILE: config,
      AWS_ENDPOINT_URL_STS: sts.url,
      ...env,
    },
    { transport, readFile: (p) => readFile(p, 'utf8'), region: 'us-west-2', now: () => 7, home: dir },
  );
}

test("AWS_PROFILE's static keys come from the credentials file, with its session token", async () => {
  const { source, explicit } = await resolve(
    {
      credentials:
        '[default]\naws_access_key_id = AKIDDEF\naws_secret_access_key = d\n' +
        '[node]\naws_access_key_id = AKIDNODE\naws_secret_access_key = node/secret+\naws_session_token = tok\n',
    },
    { AWS_PROFILE: 'node' },
  );
  assert.equal(explicit, true);
  assert.deepEqual(await source?.fetch(), {
    accessKeyId: 'AKIDNODE',
    secretAccessKey: 'node/secret+',
    sessionToken: 'tok',
  });
  assert.match(source?.name ?? '', /^profile node \(.*credentials-/);
});

test('a profile of the config file ([profile NAME]) serves as well', async () => {
  const { source } = await resolve(
    { config: '[profile cfg]\naws_access_key_id = AKIDCFG\naws_secret_access_key = c\n' },
    { AWS_PROFILE: 'cfg' },
  );
  assert.deepEqual(await source?.fetch(), { accessKeyId: 'AKIDCFG', secretAccessKey: 'c' });
});

test('without AWS_PROFILE the default profile is used when it has credentials, and nothing when the files are absent', async () => {
  const withDefault = await resolve(
    { credentials: '[default]\naws_access_key_id = A\naws_secret_access_key = B\n' },
    {},
  );
  assert.equal(withDefault.explicit, false);
  assert.deepEqual(await withDefault.source?.fetch(), { accessKeyId: 'A', secretAccessKey: 'B' });
  const none = await resolve({}, {});
  assert.equal(none.source, undefined);
});

test('a web identity profile trades its token file at STS for the role', async () => {
  const token = join(dir, 'token');
  await writeFile(token, 'eyJ.profile.token\n');
  const { source } = await resolve(
    {
      config: `[profile irsa]\nrole_arn = arn:aws:iam::1:role/node\nweb_identity_token_file = ${token}\nrole_session_name = s1\n`,
    },
    { AWS_PROFILE: 'irsa' },
  );
  const got = await source?.fetch();
  assert.equal(got?.accessKeyId, 'ASIAPROFILE');
  const body = new URLSearchParams(sts.requests.at(-1)?.body ?? '');
  assert.equal(body.get('Action'), 'AssumeRoleWithWebIdentity');
  assert.equal(body.get('RoleArn'), 'arn:aws:iam::1:role/node');
  assert.equal(body.get('RoleSessionName'), 's1');
  assert.equal(body.get('WebIdentityToken'), 'eyJ.profile.token');
});

test('AWS_PROFILE naming a profile neither file has is refused, naming both files', async () => {
  await assert.rejects(
    resolve(
      { credentials: '[other]\naws_access_key_id = A\naws_secret_access_key = B\n' },
      { AWS_PROFILE: 'gone' },
    ),
    (err: unknown) =>
      err instanceof CredentialsError &&
      /AWS_PROFILE=gone: no profile \[gone\] in .*credentials-.* nor \[profile gone\] in .*config-/.test(
        err.message,
      ),
  );
});

test('profiles vpcnet cannot use are refused with the key that makes them so', async () => {
  const refused = async (profile: string, key: RegExp) =>
    assert.rejects(resolve({ config: `[profile p]\n${profile}` }, { AWS_PROFILE: 'p' }), (err: unknown) => {
      assert.ok(err instanceof CredentialsError);
      assert.match(err.message, key);
      return true;
    });
  await refused('credential_process = /bin/creds\n', /external credential process \(credential_process\)/);
  await refused('role_arn = arn:aws:iam::1:role/x\nsource_profile = base\n', /\(source_profile\)/);
  await refused('sso_session = corp\n', /IAM Identity Center \(SSO\) \(sso_session\)/);
  await refused('aws_access_key_id = AKIDHALF\n', /has no aws_secret_access_key/);
  await refused('role_arn = arn:aws:iam::1:role/x\n', /has role_arn without web_identity_token_file/);
});
