// Building the production Cloud from the node's environment: the region (AWS_REGION, else IMDS),
// the EC2 endpoint (AWS_EC2_ENDPOINT, upstream's own variable, wins over the SDKs'
// AWS_ENDPOINT_URL_EC2 as it does in aws-node), the credential chain, one HTTP transport for EC2
// and the credential sources.
import { AwsCloud } from './aws.ts';
import type { AwsCredentials } from './credentials/aws-credentials.ts';
import { credentialSourceFromEnv } from './credentials/credential-chain.ts';
import { RefreshingCredentials } from './credentials/refreshing-credentials.ts';
import { Ec2QueryClient } from './ec2-query/ec2-query-client.ts';
import { HttpTransport } from './ec2-query/http-transport.ts';
import { regionalEndpoint } from './ec2-query/regional-endpoint.ts';
import { ImdsClient, type ImdsClientOptions, imdsEndpointFromEnv } from './imds.ts';

export interface AwsCloudOptions {
  /** Default: AWS_REGION, else the instance's region from IMDS. */
  readonly region?: string;
  /** EC2 endpoint; default AWS_EC2_ENDPOINT, else AWS_ENDPOINT_URL_EC2 of `env`, else the regional endpoint. */
  readonly ec2Endpoint?: string;
  /** Timeout of one EC2 HTTP request, ms (one attempt: LimitedCloud retries). */
  readonly requestTimeoutMs?: number;
  /** Timeout of connecting to EC2, ms. */
  readonly connectTimeoutMs?: number;
  /** Default: the chain of credentialSourceFromEnv (env, web identity, container, instance profile). */
  readonly credentials?: AwsCredentials;
  readonly imds?: ImdsClient | ImdsClientOptions;
  /** AWS_EC2_METADATA_DISABLED=true: credentials never come from the instance profile. */
  readonly metadataDisabled?: boolean;
  /** Where `~/.aws` (the shared config and credentials files) is; default $HOME. */
  readonly home?: string;
  /**
   * Where AWS_REGION, AWS_EC2_ENDPOINT, AWS_ENDPOINT_URL_EC2, AWS_EC2_METADATA_SERVICE_ENDPOINT and
   * the credential variables are read; default process.env.
   */
  readonly env?: NodeJS.ProcessEnv;
}

/** The parts an AwsCloud is made of, for what calls EC2 (and STS, IAM) beside it: the preflight doctor. */
export interface AwsClients {
  readonly ec2: Ec2QueryClient;
  readonly imds: ImdsClient;
  readonly region: string;
  readonly ec2Endpoint: URL;
  readonly credentials: RefreshingCredentials;
  /** Where the credentials come from (the chain's source name). */
  readonly credentialSource: string;
  readonly transport: HttpTransport;
}

/** Builds the EC2 client (one attempt per call) and the IMDS client. */
export async function createAwsCloud(options: AwsCloudOptions = {}): Promise<AwsCloud> {
  const { ec2, imds } = await createAwsClients(options);
  return new AwsCloud({ ec2, imds });
}

/** The clients createAwsCloud builds, from the same environment and by the same rules. */
export async function createAwsClients(options: AwsCloudOptions = {}): Promise<AwsClients> {
  const env = options.env ?? process.env;
  const imds =
    options.imds instanceof ImdsClient
      ? options.imds
      : new ImdsClient({ endpoint: imdsEndpointFromEnv(env), ...options.imds });
  const region = options.region ?? nonEmpty(env.AWS_REGION) ?? (await imds.get('placement/region')).trim();
  const endpoint = ec2EndpointOf(options.ec2Endpoint, env) ?? regionalEndpoint('ec2', region);
  const transport = new HttpTransport({
    requestTimeoutMs: options.requestTimeoutMs ?? 10_000,
    connectTimeoutMs: options.connectTimeoutMs ?? 3_000,
  });
  const fixed = options.credentials;
  const source =
    fixed !== undefined
      ? { name: 'given credentials', fetch: () => Promise.resolve(fixed) }
      : await credentialSourceFromEnv(env, {
          transport,
          imds,
          region,
          ...(options.metadataDisabled === undefined ? {} : { metadataDisabled: options.metadataDisabled }),
          ...(options.home === undefined ? {} : { home: options.home }),
        }).catch((err: unknown) => {
          transport.close();
          throw err;
        });
  const credentials = new RefreshingCredentials(source);
  const ec2 = new Ec2QueryClient({ endpoint, region, credentials, transport });
  return { ec2, imds, region, ec2Endpoint: endpoint, credentials, credentialSource: source.name, transport };
}

/** The configured EC2 endpoint, checked here so that a bad one stops the agent naming the variable. */
function ec2EndpointOf(given: string | undefined, env: NodeJS.ProcessEnv): URL | undefined {
  const found = (
    [
      ['ec2Endpoint', given],
      ['AWS_EC2_ENDPOINT', nonEmpty(env.AWS_EC2_ENDPOINT)],
      ['AWS_ENDPOINT_URL_EC2', nonEmpty(env.AWS_ENDPOINT_URL_EC2)],
    ] as const
  ).find(([, value]) => value !== undefined);
  if (found === undefined) return undefined;
  const [variable, value = ''] = found;
  if (!/^https?:\/\//.test(value) || !URL.canParse(value)) {
    throw new Error(`${variable} must be an http(s) URL of the EC2 API, got '${value}'`);
  }
  return new URL(value);
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
}
