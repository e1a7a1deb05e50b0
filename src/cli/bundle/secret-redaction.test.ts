import assert from 'node:assert/strict';
import { test } from 'node:test';
import { REDACTED, redactSecrets, redactSecretsInBytes } from './secret-redaction.ts';

/** Asserts the secret is gone, the text around it stays, and the redaction was counted. */
function assertRedacted(input: string, secret: string, expected: string): void {
  const { text, redacted } = redactSecrets(input);
  assert.equal(text.includes(secret), false, `${secret} survived in ${text}`);
  assert.equal(text, expected);
  assert.ok(redacted >= 1, 'counted');
}

test('a kubeconfig keeps its fields but loses its token, client key and client certificate', () => {
  const kubeconfig = [
    'users:',
    '- name: calico',
    '  user:',
    '    token: sa-token-9f8e7d6c5b4a',
    '    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t',
    '    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQ==',
    'clusters:',
    '- cluster:',
    '    certificate-authority-data: Q0EtZGF0YQ==',
    '    server: https://10.96.0.1:443',
  ].join('\n');
  const { text, redacted } = redactSecrets(kubeconfig);
  assert.equal(redacted, 3);
  for (const secret of ['sa-token-9f8e7d6c5b4a', 'LS0tLS1CRUdJTiBDRVJU', 'LS0tLS1CRUdJTiBSU0Eg'])
    assert.equal(text.includes(secret), false, secret);
  assert.match(text, /^ {4}token: <redacted>$/m);
  assert.match(text, /^ {4}client-key-data: <redacted>$/m);
  assert.match(text, /^ {4}client-certificate-data: <redacted>$/m);
  // What is no secret stays readable: the CA (public) and the server.
  assert.match(text, /certificate-authority-data: Q0EtZGF0YQ==/);
  assert.match(text, /server: https:\/\/10\.96\.0\.1:443/);
});

test('a JSON "token" field keeps its quotes, so the file stays JSON', () => {
  const input = '{"type":"other","kubernetes":{"token":"abc.def-123","kubeconfig":"/etc/k"}}';
  assertRedacted(
    input,
    'abc.def-123',
    '{"type":"other","kubernetes":{"token":"<redacted>","kubeconfig":"/etc/k"}}',
  );
  assert.deepEqual(JSON.parse(redactSecrets(input).text).kubernetes, {
    token: REDACTED,
    kubeconfig: '/etc/k',
  });
});

test('token-like field names of every spelling are redacted: id-token, bearerToken, AWS_SESSION_TOKEN, password', () => {
  assertRedacted('id-token: eyX1', 'eyX1', 'id-token: <redacted>');
  assertRedacted('{"bearerToken": "s3cr3t"}', 's3cr3t', '{"bearerToken": "<redacted>"}');
  assertRedacted('AWS_SESSION_TOKEN=FwoGZXIvYXdz', 'FwoGZXIvYXdz', 'AWS_SESSION_TOKEN=<redacted>');
  assertRedacted("password: 'hunter2'", 'hunter2', "password: '<redacted>'");
  assertRedacted('--token=abc123xyz', 'abc123xyz', '--token=<redacted>');
});

test('AWS keys: an access key ID anywhere, a secret access key in env, ini, JSON and XML form', () => {
  assertRedacted('using key AKIAIOSFODNN7EXAMPLE now', 'AKIAIOSFODNN7EXAMPLE', 'using key <redacted> now');
  assertRedacted('ASIAZZZZZZZZZZZZZZZZ', 'ASIAZZZZZZZZZZZZZZZZ', REDACTED);
  const secret = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
  assertRedacted(`AWS_SECRET_ACCESS_KEY=${secret}`, secret, 'AWS_SECRET_ACCESS_KEY=<redacted>');
  assertRedacted(`aws_secret_access_key = ${secret}`, secret, 'aws_secret_access_key = <redacted>');
  assertRedacted(
    `{"AccessKeyId":"x","SecretAccessKey":"${secret}","Token":"IQoJb3JpZ2lu"}`,
    secret,
    '{"AccessKeyId":"x","SecretAccessKey":"<redacted>","Token":"<redacted>"}',
  );
  assertRedacted(
    `<SecretAccessKey>${secret}</SecretAccessKey><SessionToken>IQoJ</SessionToken>`,
    secret,
    '<SecretAccessKey><redacted></SecretAccessKey><SessionToken><redacted></SessionToken>',
  );
});

test('an Authorization header keeps its scheme; a long bearer token and a JWT are redacted anywhere', () => {
  assertRedacted('Authorization: Bearer abc.def.ghi', 'abc.def.ghi', 'Authorization: Bearer <redacted>');
  assertRedacted(
    '"authorization": "AWS4-HMAC-SHA256 Credential=x/20240101, Signature=ff00"',
    'Signature=ff00',
    '"authorization": "AWS4-HMAC-SHA256 <redacted>"',
  );
  assertRedacted(
    'retrying with Bearer 0123456789abcdefXYZ== after 401',
    '0123456789abcdefXYZ',
    'retrying with Bearer <redacted> after 401',
  );
  const jwt = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2lnbmF0dXJl';
  assertRedacted(`read ${jwt} from file`, jwt, 'read <redacted> from file');
});

test('private keys and certificates in PEM form are redacted whole, their labels kept', () => {
  const pem = '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nq83j\n-----END RSA PRIVATE KEY-----';
  assertRedacted(
    `key:\n${pem}\nafter`,
    'MIIEowIBAAKCAQEA',
    'key:\n-----BEGIN RSA PRIVATE KEY-----\n<redacted>\n-----END RSA PRIVATE KEY-----\nafter',
  );
  assertRedacted(
    '-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----',
    'MIIC',
    '-----BEGIN CERTIFICATE-----\n<redacted>\n-----END CERTIFICATE-----',
  );
});

test('a password in a URL is redacted, the user and host stay', () => {
  assertRedacted(
    'proxy https://alice:pa55word@proxy.local:3128',
    'pa55word',
    'proxy https://alice:<redacted>@proxy.local:3128',
  );
});

test("vpcnet's own state and conflist come out unchanged: counters, keys, addresses and prose are no secrets", () => {
  const plain = [
    '{"cniVersion":"1.0.0","name":"vpcnet","plugins":[{"type":"vpcnet","agentSocket":"/run/vpcnet/agent.sock"}]}',
    '{"ec2":{"tokenWaits":3,"token":0,"throttled":1},"key":"vpcnet/c1/eth0","ip":"10.0.1.5"}',
    'cannot read the bearer token file: ENOENT',
    'tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token',
  ].join('\n');
  assert.deepEqual(redactSecrets(plain), { text: plain, redacted: 0 });
});

test('redacting twice changes nothing more', () => {
  const once = redactSecrets(
    'token: abc\nAuthorization: Bearer 0123456789abcdefgh\nAKIAIOSFODNN7EXAMPLE',
  ).text;
  assert.deepEqual(redactSecrets(once), { text: once, redacted: 0 });
});

test('bytes around a redaction come out unchanged, whatever their encoding', () => {
  const before = Buffer.from([0xff, 0x00, 0xc3, 0xa9]);
  const after = Buffer.from(' ✓ \xfe', 'latin1');
  const input = Buffer.concat([before, Buffer.from('\ntoken: abc\n'), after]);
  const { content, redacted } = redactSecretsInBytes(input);
  assert.equal(redacted, 1);
  assert.deepEqual(content, Buffer.concat([before, Buffer.from('\ntoken: <redacted>\n'), after]));
  const untouched = Buffer.from([0x80, 0x81, 0x0a]);
  assert.equal(redactSecretsInBytes(untouched).content, untouched, 'nothing to redact: the same buffer');
});
