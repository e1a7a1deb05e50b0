import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { startMetricsServer } from '../../metrics/metrics-server.ts';
import { AgentMetrics } from './agent-metrics.ts';
import { httpGet } from './testing/observed-agent.ts';

test('GET /metrics answers the text format with its Content-Type; other paths 404, other methods 405', async () => {
  const metrics = new AgentMetrics();
  metrics.operation('ADD', true, 3);
  const server = await startMetricsServer(0, metrics);
  try {
    const port = server.address.port;
    const ok = await httpGet(port, '/metrics');
    assert.equal(ok.status, 200);
    assert.match(ok.contentType, /^text\/plain; version=0\.0\.4; charset=utf-8$/);
    assert.match(ok.body, /^awscni_add_ip_req_count 1$/m);
    assert.equal((await httpGet(port, '/')).status, 404);
    assert.equal((await httpGet(port, '/metricsx')).status, 404);
    const post = await httpGet(port, '/metrics', 'POST');
    assert.equal(post.status, 405);
  } finally {
    await server.close();
  }
  await assert.rejects(httpGet(server.address.port, '/metrics'), 'closed: nothing listens any more');
});

test('a metrics port already in use fails the start with a message naming VPCNET_METRICS_PORT', async () => {
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, resolve));
  const port = (taken.address() as { port: number }).port;
  try {
    await assert.rejects(
      startMetricsServer(port, new AgentMetrics()),
      (err: Error) =>
        err.message.includes(`cannot serve Prometheus metrics on *:${port}: the port is already in use`) &&
        err.message.includes('VPCNET_METRICS_PORT'),
    );
  } finally {
    taken.close();
  }
});
