// A service's regional endpoint when none is configured: https://<service>.<region>.amazonaws.com,
// with the .com.cn suffix in the China regions.

export function regionalEndpoint(service: string, region: string): URL {
  if (!/^[a-z0-9-]+$/.test(region)) throw new RangeError(`not an AWS region: ${JSON.stringify(region)}`);
  const suffix = region.startsWith('cn-') ? 'amazonaws.com.cn' : 'amazonaws.com';
  return new URL(`https://${service}.${region}.${suffix}/`);
}
