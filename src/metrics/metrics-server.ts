// Prometheus scrapes GET /metrics (text exposition format) on VPCNET_METRICS_PORT, every address
// of the node's network namespace, as upstream's :61678.
import {
  type HttpEndpoint,
  refuseUnlessGet,
  sendJson,
  sendText,
  startHttpEndpoint,
} from './http-endpoint.ts';

/** What the endpoint serves: the registry's text exposition format, and its Content-Type. */
export interface Exposition {
  exposition(): Promise<{ readonly contentType: string; readonly text: string }>;
}

export function startMetricsServer(port: number, metrics: Exposition): Promise<HttpEndpoint> {
  return startHttpEndpoint({
    what: 'Prometheus metrics',
    setting: 'VPCNET_METRICS_PORT, or DISABLE_METRICS=true',
    host: undefined,
    port,
    async handle(req, res) {
      const path = (req.url ?? '/').split('?')[0];
      if (path !== '/metrics') {
        sendJson(res, 404, { error: `no route ${path}: metrics are at /metrics` });
        return;
      }
      if (refuseUnlessGet(req, res)) return;
      const { contentType, text } = await metrics.exposition();
      sendText(res, 200, contentType, text);
    },
  });
}
