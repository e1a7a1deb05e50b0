import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { getJson } from '../../infra/unix-socket-json.ts';
import { CLOUD_MUTATIONS } from '../../ipam/testing/fake-cloud.ts';
import { parseExposition, sample } from '../../metrics/testing/exposition.ts';
import { httpGet, observedNode } from '../observability/testing/observed-agent.ts';
import { agentWorlds, until } from '../testing/agent-world.ts';
import { cniRequest } from '../testing/cni-request.ts';

const worlds = agentWorlds();

type State = Record<string, unknown> & { pool: Record<string, unknown> };

async function json(port: number, path: string): Promise<Record<string, unknown>> {
  const res = await httpGet(port, path);
  assert.equal(res.status, 200, `${path}: ${res.body}`);
  assert.match(res.contentType, /^application\/json/);
  return JSON.parse(res.body) as Record<string, unknown>;
}

test('introspection over HTTP serves the socket’s state and its narrower views; metrics count the same pods', async () => {
  const node = await observedNode(worlds);
  const agent = await node.start();
  const port = agent.endpoints.introspection?.address.port ?? 0;
  const metricsPort = agent.endpoints.metrics?.address.port ?? 0;
  try {
    for (const p of ['a', 'b']) {
      const out = await agent.cni(cniRequest('ADD', `c-${p}`, await node.netns(p), `pod-${p}`, `uid-${p}`));
      assert.equal(out.exitCode, 0, out.stdout);
    }
    const overHttp = (await json(port, '/v1/state')) as State;
    const overSocket = (await getJson(node.config.agentSocket, '/v1/state')).body as State;
    for (const field of [
      'instanceId',
      'attachments',
      'cooling',
      'bindings',
      'events',
      'cloudErrors',
      'deadPodGc',
    ])
      assert.deepEqual(overHttp[field], overSocket[field], `${field} as the socket says`);
    assert.deepEqual(overHttp.pool.enis, overSocket.pool.enis);
    assert.equal((overHttp.attachments as unknown[]).length, 2);

    const enis = (await json(port, '/v1/enis')).enis as {
      eniId: string;
      addresses: Record<string, unknown>;
    }[];
    assert.deepEqual(enis, overSocket.pool.enis, 'ENIs with their addresses');
    const pods = await json(port, '/v1/pods');
    assert.deepEqual(pods.attachments, overSocket.attachments, 'attachments with what each owns');
    assert.deepEqual(pods.bindings, []);
    const pool = await json(port, '/v1/pool');
    assert.deepEqual(pool.stats, overSocket.pool.stats);
    assert.equal(pool.enis, undefined, 'the pool view leaves the ENIs to /v1/enis');
    assert.deepEqual(await json(port, '/v1/cloud-errors'), { cloudErrors: [] });

    assert.equal((await httpGet(port, '/v1/state', 'POST')).status, 405, 'read-only');
    assert.equal((await httpGet(port, '/v1/state', 'DELETE')).status, 405);
    assert.equal((await httpGet(port, '/v1/nothing')).status, 404);

    const metrics = parseExposition((await httpGet(metricsPort, '/metrics')).body);
    assert.equal(sample(metrics, 'awscni_assigned_ip_addresses'), 2);
    assert.equal(sample(metrics, 'vpcnet_attachments'), 2);
    assert.ok((sample(metrics, 'process_resident_memory_bytes') ?? 0) > 0, 'process metrics where served');
    assert.equal(
      sample(metrics, 'vpcnet_cni_operation_duration_seconds_count', { command: 'ADD', outcome: 'ok' }),
      2,
    );
    // At least one durable write per answered ADD (its record of intent is only appended).
    assert.ok((sample(metrics, 'vpcnet_ledger_commit_duration_seconds_count', { outcome: 'ok' }) ?? 0) >= 2);
    // Each of those fdatasyncs, on the event loop or (after a slow one) through the thread pool.
    const syncs = (place: string) => sample(metrics, 'vpcnet_ledger_syncs_total', { place }) ?? 0;
    assert.ok(syncs('loop') + syncs('pool') >= 2);
    assert.ok(
      (sample(metrics, 'awscni_ec2api_req_count', { fn: 'DescribeNetworkInterfaces' }) ?? 0) >= 1,
      'EC2 requests of the start-up are counted',
    );
  } finally {
    await agent.stop();
  }
  await assert.rejects(httpGet(port, '/v1/state'), 'the introspection endpoint closed with the agent');
  await assert.rejects(httpGet(metricsPort, '/metrics'), 'the metrics endpoint closed with the agent');
});

test('EC2 errors reach the state’s cloudErrors, newest first, and the error metrics', async () => {
  const node = await observedNode(worlds);
  node.cloud.enis.get('eni-primary')!.secondaryIps.splice(4); // the pool wants to grow
  for (const m of CLOUD_MUTATIONS) node.cloud.failNext(m, undefined, 10_000);
  const agent = await node.start();
  try {
    const errors = () => agent.introspect().cloudErrors as { action: string; code: string; time: string }[];
    await until(() => errors().length > 0, 10_000);
    const [newest] = errors();
    assert.equal(newest?.action, 'AssignPrivateIpAddresses');
    assert.equal(newest?.code, 'RequestLimitExceeded');
    assert.ok(Math.abs(Date.parse(newest?.time ?? '') - Date.now()) < 60_000, 'an ISO time of now');
    const port = agent.endpoints.introspection?.address.port ?? 0;
    // EC2 goes on throttling while the test reads: the later list may have newer errors on top,
    // and the endpoint's list must be the rest of it, in the same order.
    const overHttp = (await json(port, '/v1/cloud-errors')).cloudErrors as unknown[];
    const later = errors();
    const from = later.findIndex((e) => JSON.stringify(e) === JSON.stringify(overHttp[0]));
    assert.ok(overHttp.length > 0 && from >= 0, 'the endpoint shows the newest errors the agent holds');
    assert.deepEqual(later.slice(from, from + overHttp.length), overHttp.slice(0, later.length - from));
    const metrics = parseExposition(
      (await httpGet(agent.endpoints.metrics?.address.port ?? 0, '/metrics')).body,
    );
    const labels = { api: 'AssignPrivateIpAddresses', error: 'RequestLimitExceeded' };
    assert.ok((sample(metrics, 'awscni_aws_api_error_count', labels) ?? 0) >= 1);
  } finally {
    await agent.stop();
  }
});

test('a port in use fails the agent’s start with the setting to change, and leaves nothing listening', async () => {
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const port = (taken.address() as { port: number }).port;
  try {
    const node = await observedNode(worlds);
    await assert.rejects(node.start({ introspection: port }), /in use \(set INTROSPECTION_BIND_ADDRESS/);
    await assert.rejects(node.start({ metrics: port }), /in use \(set VPCNET_METRICS_PORT/);
  } finally {
    taken.close();
  }
});
