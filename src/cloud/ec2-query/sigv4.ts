// AWS Signature Version 4 over node:crypto: the canonical request (method, path, sorted query,
// lowercased sorted headers, the body's SHA-256), the string to sign, the key derived from the
// secret through date, region and service, and the Authorization header. A session token is sent
// as x-amz-security-token and signed with the rest, as EC2 accepts it.
import { createHash, createHmac } from 'node:crypto';
import { uriEncode } from './query-form.ts';

export interface SigningCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

export interface SignableRequest {
  readonly method: string;
  readonly url: URL;
  /** Headers to sign and send; `host` and `x-amz-date` are added when absent. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export interface SigningScope {
  readonly region: string;
  /** The signing name of the service: "ec2", "sts", … */
  readonly service: string;
}

const ALGORITHM = 'AWS4-HMAC-SHA256';

/** The headers to send: the request's, plus host, x-amz-date, x-amz-security-token and Authorization. */
export function signRequest(
  request: SignableRequest,
  credentials: SigningCredentials,
  scope: SigningScope,
  now: Date,
): Record<string, string> {
  const headers = new Map<string, string>();
  for (const [name, value] of Object.entries(request.headers)) headers.set(name.toLowerCase(), value);
  const amzDate = headers.get('x-amz-date') ?? amzDateOf(now);
  headers.set('x-amz-date', amzDate);
  if (!headers.has('host')) headers.set('host', request.url.host);
  if (credentials.sessionToken !== undefined) headers.set('x-amz-security-token', credentials.sessionToken);

  const names = [...headers.keys()].sort();
  const signedHeaders = names.join(';');
  const canonicalRequest = [
    request.method.toUpperCase(),
    canonicalPath(request.url),
    canonicalQuery(request.url),
    names.map((n) => `${n}:${canonicalHeaderValue(headers.get(n) ?? '')}\n`).join(''),
    signedHeaders,
    sha256Hex(request.body),
  ].join('\n');
  const day = amzDate.slice(0, 8);
  const credentialScope = `${day}/${scope.region}/${scope.service}/aws4_request`;
  const stringToSign = [ALGORITHM, amzDate, credentialScope, sha256Hex(canonicalRequest)].join('\n');
  const key = signingKey(credentials.secretAccessKey, day, scope.region, scope.service);
  const signature = createHmac('sha256', key).update(stringToSign, 'utf8').digest('hex');

  const out: Record<string, string> = Object.fromEntries(headers);
  out.authorization =
    `${ALGORITHM} Credential=${credentials.accessKeyId}/${credentialScope}, ` +
    `SignedHeaders=${signedHeaders}, Signature=${signature}`;
  return out;
}

/** 20150830T123600Z */
export function amzDateOf(now: Date): string {
  return now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

function signingKey(secret: string, day: string, region: string, service: string): Buffer {
  let key = createHmac('sha256', `AWS4${secret}`).update(day, 'utf8').digest();
  for (const part of [region, service, 'aws4_request']) {
    key = createHmac('sha256', key).update(part, 'utf8').digest();
  }
  return key;
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Each segment of the (already encoded) path encoded once more, as every service but S3 wants. */
function canonicalPath(url: URL): string {
  const path = url.pathname === '' ? '/' : url.pathname;
  return path.split('/').map(uriEncode).join('/');
}

function canonicalQuery(url: URL): string {
  return [...url.searchParams]
    .map(([name, value]) => [uriEncode(name), uriEncode(value)] as const)
    .sort(([an, av], [bn, bv]) => (an < bn ? -1 : an > bn ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
}

function canonicalHeaderValue(value: string): string {
  return value.trim().replace(/\s+/g, ' ');
}
