// The read-only introspection endpoint over HTTP (INTROSPECTION_BIND_ADDRESS, loopback only, as
// upstream's :61679): `/v1/state` is exactly what the agent socket's `/v1/state` answers (the same
// introspect()), the other routes are the narrower views an operator curls.
import type { HttpEndpoint } from '../../metrics/http-endpoint.ts';
import { refuseUnlessGet, sendJson, startHttpEndpoint } from '../../metrics/http-endpoint.ts';
import type { introspection } from './introspection.ts';

/** The agent's state as introspect() returns it (RunningAgent.introspect). */
export type AgentState = ReturnType<typeof introspection> & Record<string, unknown>;

/** Each route's view of the state. */
const VIEWS: Readonly<Record<string, (s: AgentState) => unknown>> = {
  '/v1/state': (s) => s,
  // ENIs with their addresses (and each address's state: assigned to whom, cooling, free).
  '/v1/enis': (s) => ({ enis: s.pool.enis }),
  // Attachments with what each owns (`resources`), and the branch ENI bindings their sandboxes hold.
  '/v1/pods': (s) => ({ attachments: s.attachments, bindings: s.bindings }),
  '/v1/pool': (s) => {
    const { enis: _enis, ...pool } = s.pool;
    return { ...pool, cooling: s.cooling };
  },
  '/v1/cloud-errors': (s) => ({ cloudErrors: s.cloudErrors ?? [] }),
};

export function startIntrospectionServer(
  bind: { readonly host: string; readonly port: number },
  introspect: () => AgentState,
): Promise<HttpEndpoint> {
  return startHttpEndpoint({
    what: 'introspection',
    setting: 'INTROSPECTION_BIND_ADDRESS, or DISABLE_INTROSPECTION=true',
    host: bind.host,
    port: bind.port,
    async handle(req, res) {
      if (refuseUnlessGet(req, res)) return;
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      const view = Object.hasOwn(VIEWS, path) ? VIEWS[path] : undefined;
      if (view === undefined) {
        sendJson(res, 404, { error: `no route ${path}`, routes: Object.keys(VIEWS) });
        return;
      }
      sendJson(res, 200, view(introspect()));
    },
  });
}
