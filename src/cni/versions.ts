// CNI spec versions: which we speak and how they compare.
import { DEFAULT_CNI_VERSION, SUPPORTED_CNI_VERSIONS } from './wire.ts';

export { DEFAULT_CNI_VERSION, SUPPORTED_CNI_VERSIONS };

export function isSupportedVersion(version: string): boolean {
  return SUPPORTED_CNI_VERSIONS.includes(version);
}

/** Numeric comparison of dotted versions ("0.4.0" < "1.0.0"); missing parts count as 0. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

/** True for the versions whose results carry `"version"` on each IP (0.3.0 – 0.4.0). */
export function isPre100(version: string): boolean {
  return compareVersions(version, '1.0.0') < 0;
}

/**
 * The version to stamp on an error object when the request itself may be unreadable:
 * the stdin's cniVersion when it is a string, else DEFAULT_CNI_VERSION.
 */
export function errorVersionFor(stdin: string): string {
  try {
    const parsed: unknown = JSON.parse(stdin);
    if (typeof parsed === 'object' && parsed !== null && 'cniVersion' in parsed) {
      const v = parsed.cniVersion;
      if (typeof v === 'string' && v !== '') return v;
    }
  } catch {
    // Unparseable stdin: fall through to the default.
  }
  return DEFAULT_CNI_VERSION;
}
