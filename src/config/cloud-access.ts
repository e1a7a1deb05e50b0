// What the agent may ask of the cloud and which ENIs it manages, from upstream's settings
// (settings-cloud-access.ts), with the combinations that cannot work refused at start, each
// naming why and what to change.
import { ConfigError } from './config-error.ts';
import type { SettingValues } from './setting.ts';
import type { CLOUD_ACCESS_SETTINGS } from './settings-cloud-access.ts';

/** Where the ENIs and addresses come from, and whether vpcnet may change them. */
export interface CloudAccess {
  /**
   * False (DISABLE_NETWORK_RESOURCE_PROVISIONING, or IMDS-only mode): vpcnet changes no ENI or
   * address in EC2; the pool lends what is attached.
   */
  readonly provisioning: boolean;
  /** ENABLE_IMDS_ONLY_MODE: no EC2 call at all; ENIs and addresses from instance metadata. */
  readonly imdsOnly: boolean;
  /** IMDS-only mode: two reads this far apart confirm an address; the ENIs are read this often (s). */
  readonly imdsStaleSeconds: number;
  /** AWS_EC2_METADATA_DISABLED: credentials never from the instance profile. */
  readonly ec2MetadataDisabled: boolean;
}

/** Which ENIs the pool manages, and when. */
export interface EniManagement {
  /** MANAGE_UNTAGGED_ENI: ENIs not tagged for this instance are used too. */
  readonly manageUntagged: boolean;
  /** AWS_MANAGE_ENIS_NON_SCHEDULABLE: the pool changes on an unschedulable (cordoned) node too. */
  readonly onUnschedulableNode: boolean;
}

type Values = SettingValues<typeof CLOUD_ACCESS_SETTINGS> & {
  readonly enablePodEni: boolean;
  readonly enableIpv6: boolean;
};

export function cloudAccessOf(v: Values): { cloudAccess: CloudAccess; eniManagement: EniManagement } {
  if (v.imdsOnlyMode) refuseWithImdsOnly(v);
  return {
    cloudAccess: {
      provisioning: !(v.imdsOnlyMode || v.disableNetworkResourceProvisioning),
      imdsOnly: v.imdsOnlyMode,
      imdsStaleSeconds: v.imdsStaleSeconds,
      ec2MetadataDisabled: v.ec2MetadataDisabled,
    },
    eniManagement: { manageUntagged: v.manageUntaggedEni, onUnschedulableNode: v.manageEnisNonSchedulable },
  };
}

function refuseWithImdsOnly(v: Values): void {
  const refuse = (other: string, why: string) => {
    throw new ConfigError(`ENABLE_IMDS_ONLY_MODE=true with ${other}: ${why}`);
  };
  if (v.enablePodEni) {
    refuse(
      'ENABLE_POD_ENI=true',
      "a pod's branch ENI is checked against EC2 (its trunk's associations) before it is used, and instance metadata cannot tell the trunk ENI; turn one off",
    );
  }
  if (v.enableIpv6) {
    refuse('ENABLE_IPv6=true', "the node's IPv6 /80 is read from, and assigned through, EC2; turn one off");
  }
  if (!v.manageUntaggedEni) {
    refuse(
      'MANAGE_UNTAGGED_ENI=false',
      'ENI tags are read from EC2 and instance metadata shows none, so no ENI but the primary could be used; set MANAGE_UNTAGGED_ENI=true (upstream ignores it in this mode)',
    );
  }
  if (v.ec2MetadataDisabled) {
    refuse(
      'AWS_EC2_METADATA_DISABLED=true',
      'this mode reads the ENIs and their addresses from instance metadata; unset AWS_EC2_METADATA_DISABLED',
    );
  }
}
