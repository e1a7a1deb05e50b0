// Each instance's instance metadata options (EC2's InstanceMetadataOptions): whether its IMDS
// endpoint answers at all, whether it requires IMDSv2 tokens, and the token's hop limit. Set with
// POST /admin/instances/{id}/metadata-options (what ModifyInstanceMetadataOptions does), shown by
// DescribeInstances, and honoured by IMDS: a disabled endpoint gives the instance no answer.

export interface MetadataOptions {
  readonly httpEndpoint: 'enabled' | 'disabled';
  readonly httpTokens: 'required' | 'optional';
  /** 1..64; 1 stops the token PUT's answer at a container's extra hop (EKS's default is 2). */
  readonly httpPutResponseHopLimit: number;
}

export const DEFAULT_METADATA_OPTIONS: MetadataOptions = {
  httpEndpoint: 'enabled',
  httpTokens: 'required',
  httpPutResponseHopLimit: 2,
};

export class MetadataOptionsStore {
  readonly #byInstance = new Map<string, MetadataOptions>();

  of(instanceId: string): MetadataOptions {
    return this.#byInstance.get(instanceId) ?? DEFAULT_METADATA_OPTIONS;
  }

  /** Changes what is given, keeps the rest; values are checked as EC2 checks them. */
  set(instanceId: string, change: Partial<MetadataOptions>): MetadataOptions {
    const next = { ...this.of(instanceId), ...change };
    if (next.httpEndpoint !== 'enabled' && next.httpEndpoint !== 'disabled')
      throw new Error('httpEndpoint must be enabled or disabled');
    if (next.httpTokens !== 'required' && next.httpTokens !== 'optional')
      throw new Error('httpTokens must be required or optional');
    const hops = next.httpPutResponseHopLimit;
    if (!Number.isInteger(hops) || hops < 1 || hops > 64)
      throw new Error('httpPutResponseHopLimit must be an integer from 1 to 64');
    this.#byInstance.set(instanceId, next);
    return next;
  }
}
