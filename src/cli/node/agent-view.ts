// What the CLI learns from the agent's socket: whether it answers, whether it serves, its state.
import { errorText } from '../../infra/error-text.ts';
import { getJson } from '../../infra/unix-socket-json.ts';

export type AgentView =
  | { readonly reachable: false; readonly reason: string }
  | { readonly reachable: true; readonly ready: boolean; readonly state: unknown };

/** Asks the agent whether it serves and for its state; an agent that does not answer is a view too. */
export async function viewAgent(socket: string): Promise<AgentView> {
  try {
    const health = await getJson(socket, '/v1/healthz');
    const state = await getJson(socket, '/v1/state');
    if (state.status !== 200) return { reachable: false, reason: `/v1/state answered ${state.status}` };
    return { reachable: true, ready: health.status === 200, state: state.body };
  } catch (err) {
    return { reachable: false, reason: `no agent answers on ${socket}: ${errorText(err)}` };
  }
}
