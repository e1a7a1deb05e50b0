// What the preflight doctor reports: one finding per misconfiguration, with what it concerns and a
// one-line fix. Errors stop the node from working (the agent cannot start, or pods get no
// network); warnings make it fail later or under load. `{"findings": [...]}` is the JSON shape.

export type DoctorSeverity = 'error' | 'warning';

export interface DoctorFinding {
  /** The check that found it (`ec2-permissions`, `imds`, `rp-filter`, ...). */
  readonly check: string;
  readonly severity: DoctorSeverity;
  /** What it concerns: an EC2 permission, a subnet, a file, a sysctl, an ENI. */
  readonly subject: string;
  /** What is wrong, in a sentence. */
  readonly message: string;
  /** What to do about it, in one line. */
  readonly fix: string;
}

/** What a check could not look at (not a finding: nothing wrong was seen). */
export interface DoctorSkip {
  readonly check: string;
  readonly reason: string;
}

export interface DoctorReport {
  readonly findings: readonly DoctorFinding[];
  /** Checks that ran and found nothing, by name. */
  readonly passed: readonly string[];
  readonly skipped: readonly DoctorSkip[];
  /** How long the whole run took, ms. */
  readonly ms: number;
}

/** Severity first, then check and subject: errors on top. */
export function sortFindings(findings: readonly DoctorFinding[]): DoctorFinding[] {
  const rank = (f: DoctorFinding) => (f.severity === 'error' ? 0 : 1);
  return [...findings].sort(
    (a, b) => rank(a) - rank(b) || a.check.localeCompare(b.check) || a.subject.localeCompare(b.subject),
  );
}
