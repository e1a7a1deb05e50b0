// Container credentials: EKS Pod Identity sets AWS_CONTAINER_CREDENTIALS_FULL_URI (the node's
// Pod Identity agent, http://169.254.170.23/v1/credentials) and AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE;
// ECS sets AWS_CONTAINER_CREDENTIALS_RELATIVE_URI (under http://169.254.170.2). Plain HTTP is
// allowed only to those addresses and loopback, so that a token is never sent across a network.
import { errorText } from '../../infra/error-text.ts';
import type { HttpTransport } from '../ec2-query/http-transport.ts';
import { type AwsCredentials, type CredentialSource, CredentialsError } from './aws-credentials.ts';
import { readCredentialsJson } from './credentials-json.ts';

export interface ContainerCredentialsDeps {
  readonly transport: HttpTransport;
  readonly readFile: (path: string) => Promise<string>;
}

const ECS_HOST = 'http://169.254.170.2';
const PLAIN_HTTP_HOSTS: ReadonlySet<string> = new Set([
  '169.254.170.2',
  '169.254.170.23',
  '[fd00:ec2::23]',
  'localhost',
  '[::1]',
]);

/** The container source, or undefined when neither container URI variable is set. */
export function containerCredentialSource(
  env: NodeJS.ProcessEnv,
  deps: ContainerCredentialsDeps,
): CredentialSource | undefined {
  const relative = env.AWS_CONTAINER_CREDENTIALS_RELATIVE_URI?.trim();
  const full = env.AWS_CONTAINER_CREDENTIALS_FULL_URI?.trim();
  if (!relative && !full) return undefined;
  const url = relative ? new URL(relative, ECS_HOST) : parseFullUri(full ?? '');
  const tokenFile = env.AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE?.trim();
  const fixedToken = env.AWS_CONTAINER_AUTHORIZATION_TOKEN?.trim();
  const name = `container credentials (${url.origin}${url.pathname})`;
  return {
    name,
    async fetch(): Promise<AwsCredentials> {
      const doing = `cannot get AWS credentials from ${name}`;
      const headers: Record<string, string> = { accept: 'application/json' };
      // The token file wins over the variable, and is read on every fetch: it is rotated.
      if (tokenFile) {
        try {
          headers.authorization = (await deps.readFile(tokenFile)).trim();
        } catch (err) {
          throw new CredentialsError(`${doing}: cannot read ${tokenFile}: ${errorText(err)}`, true, {
            cause: err,
          });
        }
      } else if (fixedToken) {
        headers.authorization = fixedToken;
      }
      const answer = await deps.transport.send('GET', url, headers).catch((err: unknown) => {
        throw new CredentialsError(`${doing}: ${errorText(err)}`, true, { cause: err });
      });
      if (answer.status !== 200) {
        const retryable = answer.status >= 500 || answer.status === 429;
        const excerpt = answer.body.replace(/\s+/g, ' ').trim().slice(0, 200);
        throw new CredentialsError(
          `${doing}: HTTP ${answer.status}${excerpt ? `: ${excerpt}` : ''}`,
          retryable,
        );
      }
      return readCredentialsJson(answer.body, name);
    },
  };
}

function parseFullUri(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new CredentialsError(
      `AWS_CONTAINER_CREDENTIALS_FULL_URI is not a URL: ${JSON.stringify(text)}`,
      false,
    );
  }
  const loopback = /^127\.\d+\.\d+\.\d+$/.test(url.hostname);
  if (
    url.protocol === 'https:' ||
    (url.protocol === 'http:' && (loopback || PLAIN_HTTP_HOSTS.has(url.hostname)))
  ) {
    return url;
  }
  throw new CredentialsError(
    `AWS_CONTAINER_CREDENTIALS_FULL_URI ${url.origin} must be https, loopback, or the ECS or EKS Pod Identity agent address`,
    false,
  );
}
