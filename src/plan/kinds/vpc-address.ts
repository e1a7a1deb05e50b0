// A VPC address held by an attachment: IPAM's to hand out and take back, nothing in the kernel.
import type { VpcAddressResource } from '../resource.ts';
import type { KindRules } from './kind.ts';

export const vpcAddressKind: KindRules<VpcAddressResource> = {
  parse: (read) => ({ kind: 'vpcAddress', ip: read.str('ip'), eniId: read.str('eniId') }),
  create: () => [],
  remove: () => [],
  check: () => [],
  identity: (r) => `vpcAddress ${r.ip}`,
  describe: (r) => `VPC address ${r.ip} of ${r.eniId}`,
  removalRank: 3,
};
