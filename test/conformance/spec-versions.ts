// The CNI spec versions the suite holds vpcnet to, and the first version of each rule. Written out
// here rather than imported from src/cni: the suite states what it expects, the plugin answers.

/** The versions vpcnet claims to speak (its VERSION answer must list exactly these). */
export const SPEC_VERSIONS = ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] as const;
export type SpecVersion = (typeof SPEC_VERSIONS)[number];

/** Versions the spec defines but vpcnet does not speak, plus ones that do not exist. */
export const UNSPOKEN_VERSIONS = ['0.1.0', '0.2.0', '2.0.0'] as const;

/** Numeric order of dotted versions ("0.4.0" < "1.0.0"). */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

/** The versions from `first` on: where a rule introduced in `first` applies. */
export function versionsFrom(first: SpecVersion): SpecVersion[] {
  return SPEC_VERSIONS.filter((v) => compareVersions(v, first) >= 0);
}

/** The versions before `first`: where a command introduced in `first` must be refused. */
export function versionsBefore(first: SpecVersion): SpecVersion[] {
  return SPEC_VERSIONS.filter((v) => compareVersions(v, first) < 0);
}

/** 0.3.0 to 0.4.0 tag each IP with its family ("version"); 1.0.0 removed the field. */
export function ipsCarryVersion(v: string): boolean {
  return compareVersions(v, '1.0.0') < 0;
}

/**
 * The version a runtime runs a conflist at (spec 1.1.0, "cniVersions"): the highest version both
 * the configuration and the runtime support, else the configuration's `cniVersion`.
 */
export function negotiatedVersion(
  conflist: { readonly cniVersion: string; readonly cniVersions?: readonly string[] },
  runtimeSupports: readonly string[],
): string | undefined {
  const offered = conflist.cniVersions ?? [conflist.cniVersion];
  const common = offered.filter((v) => runtimeSupports.includes(v));
  return common.sort(compareVersions).at(-1);
}
