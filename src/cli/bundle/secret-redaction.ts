// Redaction of token-like text in what a support bundle collects: the bundle leaves the node (it is
// attached to a bug report), so a credential that reached a log line, a conflist or the agent's
// state must not go with it. Each form is replaced by REDACTED and the rest is left as it was, so
// the bundle still reads (a JSON file stays JSON, a kubeconfig keeps its field names).

export const REDACTED = '<redacted>';

/**
 * A field whose name ends like one of these holds a secret (the name is compared lower-case and
 * without '-', '_' and '.'): `token`, `id-token`, `bearerToken`, `AWS_SESSION_TOKEN`,
 * `client-key-data`, `aws_secret_access_key`, `SecretAccessKey`, `password`…
 */
const SECRET_FIELD_ENDINGS = [
  'token',
  'secret',
  'password',
  'passwd',
  'secretaccesskey',
  'privatekey',
  'clientkey',
  'clientkeydata',
  'clientcertificate',
  'clientcertificatedata',
  'apikey',
];

function isSecretField(name: string): boolean {
  const bare = name.toLowerCase().replace(/[-_.]/g, '');
  return SECRET_FIELD_ENDINGS.some((e) => bare.endsWith(e));
}

/** Values that are no secret whatever their field (counters, flags): left readable. */
const PLAIN_SCALAR = /^(?:-?\d+(?:\.\d+)?|true|false|null|~)$/;

/**
 * `name: value`, `"name": "value"`, `name=value` (env, flags): a quoted or bare value on the same
 * line. A value that opens an object or a list is left alone: its own fields are matched in turn.
 */
const FIELD =
  /(["']?)([A-Za-z0-9_.-]+)\1([ \t]*[:=][ \t]*)("(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^\s,;{}[\]"'][^\s,;}\]"']*)/g;

/** Whole PEM blocks: private keys and certificates (a client's identity). */
const PEM = /-----BEGIN ([A-Z0-9 ]*(?:PRIVATE KEY|CERTIFICATE))-----[\s\S]*?-----END \1-----/g;

/** An `Authorization` header or field: its scheme (Bearer, Basic, AWS4-HMAC-SHA256…) stays. */
const AUTH_HEADER = /\b(authorization["']?[ \t]*[:=][ \t]*["']?)(?:([A-Za-z0-9-]+)[ \t]+)?[^"'\s][^"'\n]*/gi;

/** A bearer token anywhere else (long enough not to be prose: "the bearer token file"). */
const BEARER = /\b(Bearer[ \t]+)[A-Za-z0-9\-._~+/]{16,}=*/gi;

/** AWS access key IDs (long-term AKIA…, temporary ASIA…). */
const AWS_KEY_ID = /\b(?:AKIA|ASIA)[A-Z0-9]{16}\b/g;

/** A JWT (a Kubernetes service account token, an OIDC ID token) anywhere in the text. */
const JWT = /\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g;

/** XML answers of EC2, STS and IMDS (`<SecretAccessKey>…</SecretAccessKey>`). */
const XML_SECRET = /<((?:[A-Za-z]*:)?(?:SecretAccessKey|SessionToken|Token))>[^<]*<\/\1>/g;

/** Credentials in a URL (`https://user:password@host`). */
const URL_PASSWORD = /(\/\/[^\s:/@]+:)[^\s@/]+@/g;

/** `text` with every token-like value replaced by REDACTED, and how many were. */
export function redactSecrets(text: string): { text: string; redacted: number } {
  let redacted = 0;
  const count = <T>(value: T): T => {
    redacted++;
    return value;
  };
  const out = text
    .replace(PEM, (_m, label: string) =>
      count(`-----BEGIN ${label}-----\n${REDACTED}\n-----END ${label}-----`),
    )
    .replace(AUTH_HEADER, (m, head: string, scheme: string | undefined) =>
      m.endsWith(REDACTED) ? m : count(`${head}${scheme === undefined ? '' : `${scheme} `}${REDACTED}`),
    )
    .replace(XML_SECRET, (_m, tag: string) => count(`<${tag}>${REDACTED}</${tag}>`))
    .replace(FIELD, (m, quote: string, name: string, sep: string, value: string) => {
      if (!isSecretField(name)) return m;
      const q = value[0] === '"' || value[0] === "'" ? value[0] : '';
      const bare = q === '' ? value : value.slice(1, -1);
      if (bare === '' || bare === REDACTED || PLAIN_SCALAR.test(bare)) return m;
      return count(`${quote}${name}${quote}${sep}${q}${REDACTED}${q}`);
    })
    .replace(BEARER, (_m, scheme: string) => count(`${scheme}${REDACTED}`))
    .replace(JWT, () => count(REDACTED))
    .replace(AWS_KEY_ID, () => count(REDACTED))
    .replace(URL_PASSWORD, (_m, user: string) => count(`${user}${REDACTED}@`));
  return { text: out, redacted };
}

/**
 * The same for file content of any encoding: read as latin1, which maps each byte to one character
 * and back, so the bytes around a redaction (binary, or UTF-8 of any kind) come out unchanged.
 */
export function redactSecretsInBytes(content: Buffer): { content: Buffer; redacted: number } {
  const { text, redacted } = redactSecrets(content.toString('latin1'));
  return { content: redacted === 0 ? content : Buffer.from(text, 'latin1'), redacted };
}
