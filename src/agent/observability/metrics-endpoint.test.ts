import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { startMetricsServer } from '../../metrics/metrics-server.ts';
import { familyTypes, parseExposition, sample } from '../../metrics/testing/exposition.ts';
import { vpcAddressOf } from '../../plan/resource.ts';
import { agentWorlds } from '../testing/agent-world.ts';
import { cniRequest } from '../testing/cni-request.ts';
import { AgentMetrics } from './agent-metrics.ts';
import { httpGet, observedNode } from './testing/observed-agent.ts';
import { UPSTREAM_SERIES } from './testing/upstream-series.ts';

const worlds = agentWorlds();

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

test('a running agent’s scrape lists every upstream awscni_* series with upstream’s type, and its start-up durations', async () => {
  const node = await observedNode(worlds);
  const agent = await node.start();
  try {
    const { body } = await httpGet(agent.endpoints.metrics?.address.port ?? 0, '/metrics');
    const types = familyTypes(body);
    const wrong = UPSTREAM_SERIES.filter((u) => types.get(u.name) !== u.type).map(
      (u) => `${u.name}: ${types.get(u.name) ?? 'missing'}, upstream ${u.type}`,
    );
    assert.deepEqual(wrong, []);
    const s = parseExposition(body);
    const init = sample(s, 'awscni_ipamd_node_initialization_duration_seconds_sum', { success: 'true' }) ?? 0;
    const startup =
      sample(s, 'awscni_ipamd_startup_duration_seconds_sum', {
        success: 'true',
        with_api_server: 'false',
        failure_reason: '',
      }) ?? 0;
    assert.equal(
      sample(s, 'awscni_ipamd_node_initialization_duration_seconds_count', { success: 'true' }),
      1,
    );
    assert.ok(init > 0, `node initialisation took ${init} s`);
    assert.ok(startup > init, `the start (${startup} s since the process began) includes it (${init} s)`);
    assert.ok(startup <= process.uptime(), 'no longer than this process has run');
    assert.equal(sample(s, 'awscni_ipamd_action_inprogress', { fn: 'nodeInit' }), 0, 'done before serving');
  } finally {
    await agent.stop();
  }
});

test('per-ENI and per-CIDR assigned addresses match the ledger; an ADD that finds the pool empty counts as no available address', async () => {
  const node = await observedNode(worlds, { VPCNET_ADD_WAIT_SECONDS: '1' });
  const agent = await node.start();
  const scrape = async () =>
    parseExposition((await httpGet(agent.endpoints.metrics?.address.port ?? 0, '/metrics')).body);
  try {
    for (const p of ['a', 'b', 'c']) {
      const out = await agent.cni(cniRequest('ADD', `c-${p}`, await node.netns(p), `pod-${p}`, `uid-${p}`));
      assert.equal(out.exitCode, 0, out.stdout);
    }
    let s = await scrape();
    const held = agent.ledger.list().map((a) => vpcAddressOf(a.resources));
    assert.equal(held.length, 3);
    const byEni = new Map<string, number>();
    for (const a of held) byEni.set(a?.eniId ?? '', (byEni.get(a?.eniId ?? '') ?? 0) + 1);
    for (const [eni, n] of byEni) assert.equal(sample(s, 'awscni_assigned_ip_per_eni', { eni }), n, eni);
    for (const a of held) assert.equal(sample(s, 'awscni_assigned_ip_per_cidr', { cidr: `${a?.ip}/32` }), 1);
    const perCidr = [...s].filter(([k]) => k.startsWith('awscni_assigned_ip_per_cidr{'));
    assert.equal(perCidr.length, 11, 'every address of the pool, assigned or not');
    assert.equal(
      perCidr.reduce((n, [, v]) => n + v, 0),
      3,
    );
    assert.equal(sample(s, 'awscni_no_available_ip_addresses'), 0);

    for (let i = 0; i < 8; i++) {
      const out = await agent.cni(
        cniRequest('ADD', `f-${i}`, await node.netns(`f${i}`), `f-${i}`, `uf-${i}`),
      );
      assert.equal(out.exitCode, 0, out.stdout);
    }
    const dry = await agent.cni(cniRequest('ADD', 'c-z', await node.netns('z'), 'pod-z', 'uid-z'));
    assert.notEqual(dry.exitCode, 0, 'no address on a full node');
    assert.match(dry.stdout, /"code": ?11/);
    s = await scrape();
    assert.equal(sample(s, 'awscni_no_available_ip_addresses'), 1);
    assert.equal(sample(s, 'vpcnet_pool_growth_wait_seconds_count', { outcome: 'timeout' }), 1);
    assert.equal(sample(s, 'awscni_assigned_ip_per_eni', { eni: 'eni-primary' }), 11);
  } finally {
    await agent.stop();
  }
});
