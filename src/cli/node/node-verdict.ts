// What `vpcnetctl status` warns about, and its verdict: a serving agent with any warning is
// degraded; notes are shown but change nothing (counters since start, work in progress).

import type { Verdict } from '../output.ts';
import type { NodeState } from './node-state.ts';

export interface Finding {
  readonly severity: 'warning' | 'note';
  readonly text: string;
}

/** Errors older than this are history, not a warning (the ring keeps them for explain). */
export const RECENT_ERROR_WINDOW_MS = 10 * 60_000;

const isoAge = (iso: string, now: number) => now - Date.parse(iso);

export function nodeFindings(s: NodeState, now: number): Finding[] {
  const found: Finding[] = [];
  const warn = (text: string) => found.push({ severity: 'warning', text });
  const note = (text: string) => found.push({ severity: 'note', text });
  const { pool } = s;
  if (pool.growthBlocked) {
    const g = pool.growthBlocked;
    const since = g.since === undefined ? '' : ` since ${new Date(g.since).toISOString()}`;
    const times = g.failures === undefined ? '' : ` (${g.failures} failed attempts)`;
    warn(`address pool cannot grow${since}${times}: ${g.reason}`);
  }
  if (pool.total > 0 && pool.available === 0)
    warn(
      `no free address: every one of ${pool.total} is assigned or cooling; ADDs wait for the pool to grow`,
    );
  if (pool.lostEnis.length > 0)
    warn(`EC2 no longer lists ENI(s) ${pool.lostEnis.join(', ')} as attached; their pods need new sandboxes`);
  const held = pool.syncDifferences.heldAddressMissing ?? 0;
  if (held > 0) warn(`EC2 sync: ${held} address(es) held by pods were missing from their ENI in EC2`);
  if (pool.syncLastError !== undefined) warn(`EC2 sync failed: ${pool.syncLastError}`);
  if (pool.syncUnconfirmed > 0)
    note(
      `EC2 sync: ${pool.syncUnconfirmed} difference(s) seen once, waiting for the next describe to confirm`,
    );
  const acted = Object.entries(pool.syncDifferences).filter(([k, v]) => k !== 'heldAddressMissing' && v > 0);
  if (acted.length > 0)
    note(`EC2 sync corrected since start: ${acted.map(([k, v]) => `${k} ${v}`).join(', ')}`);
  const cloud = s.cloudErrors.filter((e) => isoAge(e.time, now) <= RECENT_ERROR_WINDOW_MS);
  if (cloud[0] !== undefined)
    warn(
      `${cloud.length} EC2 error(s) in the last ${RECENT_ERROR_WINDOW_MS / 60_000} min; latest: ${cloud[0].action} ${cloud[0].code}: ${cloud[0].message}`,
    );
  const cni = s.recentErrors.filter((e) => isoAge(e.time, now) <= RECENT_ERROR_WINDOW_MS);
  if (cni[0] !== undefined) {
    const e = cni[0];
    const who = e.pod === undefined ? (e.containerId ?? '?') : `${e.namespace ?? '?'}/${e.pod}`;
    warn(
      `${cni.length} failed CNI operation(s) in the last ${RECENT_ERROR_WINDOW_MS / 60_000} min; latest: ${e.command} ${who}: ${e.message}`,
    );
  }
  if (s.recovery)
    warn(
      `recovery in progress (${s.recovery.reason ?? 'ledger lost'}): ${s.recovery.held} pod network(s) held from the node until confirmed`,
    );
  if (s.spoolDepth !== undefined && s.spoolDepth > 0)
    warn(`${s.spoolDepth} spooled DEL(s) not applied yet (the agent drains them every few seconds)`);
  if (pool.pendingEnis > 0) note(`${pool.pendingEnis} ENI(s) part-way through being created or freed`);
  if (pool.leakedEnisDeleted > 0) note(`${pool.leakedEnisDeleted} leaked ENI(s) deleted since start`);
  const adding = s.attachments.filter((a) => a.phase === 'adding').length;
  if (adding > 0) note(`${adding} ADD(s) in progress`);
  return found;
}

/** The verdict of a serving agent (an agent that does not serve is 'down' before this is asked). */
export function servingVerdict(findings: readonly Finding[]): Verdict {
  return findings.some((f) => f.severity === 'warning') ? 'degraded' : 'healthy';
}
