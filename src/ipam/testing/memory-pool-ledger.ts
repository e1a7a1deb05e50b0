// An in-memory PoolLedger for IPAM unit tests: assignments set by the test, cooldown records kept
// as the agent's Ledger keeps them (one per address), commits counted.
import type { AttachmentKey } from '../../plan/attachment.ts';
import type { AssignmentRecord, CoolingRecord, PoolLedger } from '../pool/pool-addresses.ts';

export class MemoryPoolLedger implements PoolLedger {
  readonly held: AssignmentRecord[] = [];
  readonly #cooling = new Map<string, CoolingRecord>();
  commits = 0;

  /** A pod's attachment holding `ip` (what ADD records as its vpcAddress resource). */
  hold(containerId: string, ip: string, eniId = 'eni-primary'): void {
    const key: AttachmentKey = { network: 'vpcnet', containerId, ifName: 'eth0' };
    this.held.push({ key, ip, eniId });
  }

  assignments(): readonly AssignmentRecord[] {
    return this.held;
  }

  eniHeld(eniId: string): boolean {
    return this.held.some((a) => a.eniId === eniId);
  }

  addCooling(ip: string, eniId: string, freedAt = 0): void {
    this.#cooling.set(ip, { ip, eniId, freedAt });
  }

  removeCooling(ip: string): boolean {
    return this.#cooling.delete(ip);
  }

  coolingAddresses(): readonly CoolingRecord[] {
    return [...this.#cooling.values()];
  }

  async commit(): Promise<void> {
    this.commits++;
  }
}
