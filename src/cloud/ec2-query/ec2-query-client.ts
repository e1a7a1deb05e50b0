// The EC2 Query API client: one signed POST per call (Action, Version 2016-11-15, flattened
// parameters), the reply's XML parsed once, an error reply thrown as an AwsServiceError. One
// attempt per call; LimitedCloud retries, each retry under the agent's rate limit.
import type { AwsCredentials } from '../credentials/aws-credentials.ts';
import type { HttpTransport } from './http-transport.ts';
import { type QueryStruct, queryFormBody } from './query-form.ts';
import { readServiceError } from './service-error.ts';
import { signRequest } from './sigv4.ts';
import { parseXml, type XmlElement } from './xml-reader.ts';

export const EC2_API_VERSION = '2016-11-15';

/** What AwsCloud needs of EC2: an action with its parameters in, the reply's root element out. */
export interface Ec2Api {
  call(action: string, params: QueryStruct): Promise<XmlElement>;
  close(): void;
}

export interface Ec2QueryClientDeps {
  readonly endpoint: URL;
  readonly region: string;
  readonly credentials: {
    get(): Promise<AwsCredentials>;
    invalidate(): void;
  };
  readonly transport: HttpTransport;
  readonly now?: () => number;
  /**
   * Another AWS Query API on the same wire (form POST, signed, XML replies): its signing name and
   * API version, e.g. STS's ('sts', '2011-06-15'). Default: EC2's.
   */
  readonly service?: { readonly signingName: string; readonly apiVersion: string };
}

/** Codes of an answer refused for its credentials: the next call fetches fresh ones. */
const STALE_CREDENTIAL_CODES: ReadonlySet<string> = new Set([
  'AuthFailure',
  'ExpiredToken',
  'InvalidClientTokenId',
]);

/**
 * EC2 refuses a signature dated more than 5 minutes off its clock. A node clock further off than
 * this is corrected by the difference to EC2's Date header (as the AWS SDKs do), so that one
 * refused call is the cost of a bad clock, not every call.
 */
const CLOCK_SKEW_TOLERANCE_MS = 4 * 60_000;

export class Ec2QueryClient implements Ec2Api {
  private readonly deps: Ec2QueryClientDeps;
  private readonly now: () => number;
  /** Added to the local clock when signing: EC2's time minus ours, when they differ by much. */
  private clockOffsetMs = 0;

  constructor(deps: Ec2QueryClientDeps) {
    this.deps = deps;
    this.now = deps.now ?? Date.now;
  }

  async call(action: string, params: QueryStruct): Promise<XmlElement> {
    const { endpoint, region, transport } = this.deps;
    const service = this.deps.service ?? { signingName: 'ec2', apiVersion: EC2_API_VERSION };
    const body = queryFormBody(action, service.apiVersion, params);
    const credentials = await this.deps.credentials.get();
    const headers = signRequest(
      {
        method: 'POST',
        url: endpoint,
        headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
        body,
      },
      credentials,
      { region, service: service.signingName },
      new Date(this.now() + this.clockOffsetMs),
    );
    const answer = await transport.send('POST', endpoint, { ...headers, 'user-agent': 'vpcnet' }, body);
    this.followServerClock(answer.date);
    if (answer.status !== 200) {
      const err = readServiceError(answer.status, answer.body);
      if (STALE_CREDENTIAL_CODES.has(err.code)) this.deps.credentials.invalidate();
      throw err;
    }
    return parseXml(answer.body);
  }

  close(): void {
    this.deps.transport.close();
  }

  private followServerClock(date: string | undefined): void {
    const serverTime = date === undefined ? Number.NaN : Date.parse(date);
    if (Number.isNaN(serverTime)) return;
    const skew = serverTime - this.now();
    this.clockOffsetMs = Math.abs(skew) >= CLOCK_SKEW_TOLERANCE_MS ? skew : 0;
  }
}
