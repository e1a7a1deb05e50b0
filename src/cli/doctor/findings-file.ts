// Where the doctor's start-up run leaves its findings for the agent's readiness probe: beside the
// agent's socket (the DaemonSet's socket dir, shared by the init step and the agent), so that
// `vpcnetctl health` holds readiness with the first error's reason until the pod restarts after a
// fix. Read by the probe every few seconds: nothing here loads more than node:fs.
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

export function findingsFileOf(agentSocket: string): string {
  return join(dirname(agentSocket), 'doctor.json');
}

/** The first error the start-up run found, as one line, or undefined (no file, no error). */
export async function heldReason(agentSocket: string): Promise<string | undefined> {
  const file = findingsFileOf(agentSocket);
  let doc: unknown;
  try {
    doc = JSON.parse(await readFile(file, 'utf8'));
  } catch {
    return undefined;
  }
  const findings = (doc as { findings?: unknown }).findings;
  if (!Array.isArray(findings)) return undefined;
  const errors = findings.filter((f) => (f as { severity?: unknown }).severity === 'error') as {
    check?: string;
    subject?: string;
    message?: string;
    fix?: string;
  }[];
  const first = errors[0];
  if (first === undefined) return undefined;
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more error(s): vpcnetctl doctor)` : '';
  return `vpcnet doctor at start (${file}): ${first.subject ?? '?'}: ${first.message ?? '?'}; fix: ${first.fix ?? '?'}${more}`;
}
