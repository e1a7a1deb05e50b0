// The agent's stop, in phases, one log line each (an operator sees where a stop that hangs is):
// refuse new requests, answer those in flight, stop the background loops, and make the ledger
// durable. The caller bounds it (stop-signal.ts).
import type { Server } from 'node:http';
import type { Logger } from '../infra/log.ts';
import type { Ledger } from '../ledger/ledger.ts';
import type { RequestGate } from './cni-ops/request-gate.ts';
import { closeRpcListener } from './cni-ops/rpc-server.ts';

export interface StoppingAgent {
  readonly gate: RequestGate;
  readonly server: Server;
  /**
   * Stops every background loop; each waits for its pass under way. The pool manager is one of
   * them: an ADD waiting for an address is answered "stopping" at once rather than after
   * VPCNET_ADD_WAIT_SECONDS, and an ENI step under way finishes.
   */
  readonly stopLoops: () => Promise<unknown>;
  readonly ledger: Ledger;
  readonly log: Logger;
}

export async function stopGracefully(a: StoppingAgent): Promise<void> {
  const { gate, log } = a;
  gate.close();
  log.info('stop: refusing new requests', { inFlight: gate.inFlight });
  const listenerClosed = closeRpcListener(a.server);
  const loopsStopped = a.stopLoops();
  await gate.idle();
  // Their connections close once the answers are written (rpc-server.ts).
  await listenerClosed;
  log.info('stop: requests in flight answered');
  await loopsStopped;
  log.info('stop: background loops stopped');
  // Every answered operation was committed before its answer; this carries what background work
  // (the pool manager, the reconcile pass) changed since. Each write is fdatasynced before it resolves.
  await a.ledger.commit();
  log.info('stop: ledger durable', { attachments: a.ledger.list().length });
}
