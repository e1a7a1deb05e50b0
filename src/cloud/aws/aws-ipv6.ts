// The EC2 client's IPv6 calls: AssignIpv6Addresses with Ipv6PrefixCount (the reply lists the
// /80s in assignedIpv6PrefixSet as bare <item> text) and UnassignIpv6Addresses with Ipv6Prefix.N.
// Prefixes leave here in canonical text (ipv6-cidr.ts), as the IPv6 contract compares strings.
import { formatIpv6Cidr, isIpv6Cidr, parseIpv6Cidr } from '../../infra/ipv6-cidr.ts';
import { CloudError } from '../cloud.ts';
import { invalidResponse, toCloudError } from '../ec2-errors.ts';
import type { Ec2Api } from '../ec2-query/ec2-query-client.ts';

export async function assignIpv6Prefixes(ec2: Ec2Api, eniId: string, count: number): Promise<string[]> {
  const doing = `assign ${count} IPv6 prefixes to ENI ${eniId}`;
  if (!Number.isInteger(count) || count < 1) {
    throw new CloudError(`cannot ${doing}: count must be a positive integer`, 'InvalidParameterValue', false);
  }
  let values: string[];
  try {
    const reply = await ec2.call('AssignIpv6Addresses', {
      NetworkInterfaceId: eniId,
      Ipv6PrefixCount: count,
    });
    values = reply.items('assignedIpv6PrefixSet').map((item) => item.text.trim());
  } catch (err) {
    throw toCloudError(doing, err);
  }
  if (values.length !== count || values.some((v) => !isIpv6Cidr(v) || parseIpv6Cidr(v).prefixLength !== 80)) {
    throw invalidResponse(doing, `${count} /80 AssignedIpv6Prefixes (got ${JSON.stringify(values)})`);
  }
  return values.map((v) => formatIpv6Cidr(parseIpv6Cidr(v)));
}

export async function unassignIpv6Prefixes(
  ec2: Ec2Api,
  eniId: string,
  prefixes: readonly string[],
): Promise<void> {
  if (prefixes.length === 0) return;
  const doing = `unassign IPv6 prefixes ${prefixes.join(', ')} from ENI ${eniId}`;
  try {
    await ec2.call('UnassignIpv6Addresses', { NetworkInterfaceId: eniId, Ipv6Prefix: [...prefixes] });
  } catch (err) {
    throw toCloudError(doing, err);
  }
}
