// Names of the fabric's links in the VPC namespace, derived from ENI ids (IFNAMSIZ: 15 chars).

/** VPC-side link name of an ENI: `v` + the last 12 hex digits of its id. */
export function vpcLinkName(eniId: string): string {
  const hex = eniId.replace(/^eni-/, '').replace(/[^0-9a-f]/gi, '');
  return `v${hex.slice(-12)}`;
}
