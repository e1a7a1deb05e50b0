// Upstream's comma-separated lists of IPv4 CIDRs (AWS_VPC_K8S_CNI_EXCLUDE_SNAT_CIDRS,
// AWS_EXTERNAL_SERVICE_CIDRS). Checked
// one by one so the error names the entry an operator must fix, not the whole list.
import { formatCidr, isCidr, parseCidr } from '../infra/ipv4.ts';
import { ConfigError } from './config-error.ts';

/**
 * The list's CIDRs in order, each written as its block (10.0.1.7/24 → 10.0.1.0/24, as nft wants
 * it); blanks around commas and empty entries are ignored.
 */
export function parseCidrList(env: string, text: string): string[] {
  const entries = text
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  for (const entry of entries) {
    if (!isCidr(entry))
      throw new ConfigError(`${env}: '${entry}' is not an IPv4 CIDR (like 198.51.100.0/24)`);
  }
  return entries.map((e) => formatCidr(parseCidr(e)));
}
