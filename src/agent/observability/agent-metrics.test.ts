import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CloudError } from '../../cloud/cloud.ts';
import { parseExposition, sample } from '../../metrics/testing/exposition.ts';
import type { ReconcileReport } from '../../reconcile/reconciler.ts';
import { AgentMetrics } from './agent-metrics.ts';

async function scrape(m: AgentMetrics): Promise<Map<string, number>> {
  return parseExposition((await m.exposition()).text);
}

function report(over: Partial<ReconcileReport>): ReconcileReport {
  return {
    repaired: [],
    bindings: [],
    netnsGone: [],
    collected: [],
    failures: [],
    durationMs: 12,
    byKind: { repaired: {}, collected: {} },
    ...over,
  };
}

test('CNI operations land in the latency histogram by command and outcome, and in upstream’s request counts', async () => {
  const m = new AgentMetrics();
  m.operation('ADD', true, 4);
  m.operation('ADD', true, 30);
  m.operation('ADD', false, 2);
  m.operation('DEL', true, 1);
  m.operation('CHECK', true, 1);
  m.operation('STATUS', true, 0.01);
  const s = await scrape(m);
  const h = 'vpcnet_cni_operation_duration_seconds';
  assert.equal(sample(s, `${h}_count`, { command: 'ADD', outcome: 'ok' }), 2);
  assert.equal(sample(s, `${h}_count`, { command: 'ADD', outcome: 'error' }), 1);
  assert.equal(
    sample(s, `${h}_bucket`, { command: 'ADD', outcome: 'ok', le: '0.005' }),
    1,
    '4 ms is under 5 ms',
  );
  assert.equal(sample(s, `${h}_bucket`, { command: 'ADD', outcome: 'ok', le: '0.05' }), 2);
  assert.equal(sample(s, `${h}_sum`, { command: 'ADD', outcome: 'ok' }), 0.034, 'seconds, not ms');
  assert.equal(sample(s, `${h}_count`, { command: 'STATUS', outcome: 'ok' }), 1);
  assert.equal(sample(s, 'awscni_add_ip_req_count'), 3, 'every ADD request, failed ones included');
  assert.equal(sample(s, 'awscni_del_ip_req_count', { reason: 'PodDeleted' }), 1);
});

test('EC2 requests count by action, errors by action and code, and their latency in ms as upstream', async () => {
  const m = new AgentMetrics();
  m.ec2Attempt({ action: 'AssignPrivateIpAddresses', ms: 120 });
  m.ec2Attempt({
    action: 'AssignPrivateIpAddresses',
    ms: 40,
    error: { code: 'RequestLimitExceeded', message: 'Request limit exceeded.', throttled: true },
  });
  m.ec2Attempt({ action: 'DescribeNetworkInterfaces', ms: 10 });
  const s = await scrape(m);
  assert.equal(sample(s, 'awscni_ec2api_req_count', { fn: 'AssignPrivateIpAddresses' }), 2);
  assert.equal(sample(s, 'awscni_ec2api_req_count', { fn: 'DescribeNetworkInterfaces' }), 1);
  assert.equal(sample(s, 'awscni_ec2api_error_count', { fn: 'AssignPrivateIpAddresses' }), 1);
  assert.equal(sample(s, 'awscni_ec2api_error_count', { fn: 'DescribeNetworkInterfaces' }), undefined);
  assert.equal(
    sample(s, 'awscni_aws_api_error_count', {
      api: 'AssignPrivateIpAddresses',
      error: 'RequestLimitExceeded',
    }),
    1,
  );
  const ok = { api: 'AssignPrivateIpAddresses', error: 'false', status: '200' };
  const failed = { api: 'AssignPrivateIpAddresses', error: 'true', status: 'RequestLimitExceeded' };
  assert.equal(sample(s, 'awscni_aws_api_latency_ms_sum', ok), 120);
  assert.equal(sample(s, 'awscni_aws_api_latency_ms_count', failed), 1);
  assert.equal(sample(s, 'awscni_aws_api_latency_ms', { ...ok, quantile: '0.5' }), 120);
});

test('ledger writes, pool growth waits and reconcile passes are timed, ledger syncs counted by place; repairs and collections count by kind', async () => {
  const m = new AgentMetrics();
  m.ledgerCommit(2, true);
  m.ledgerCommit(8, false);
  m.ledgerSync('loop');
  m.ledgerSync('loop');
  m.ledgerSync('pool');
  m.poolWait(1500, true);
  m.poolWait(10_000, false);
  m.reconciled(report({ byKind: { repaired: { route: 2, podNetwork: 1 }, collected: { veth: 1 } } }));
  m.reconciled(
    report({ failures: [{ error: 'boom' }], byKind: { repaired: { route: 1 }, collected: { snat: 3 } } }),
  );
  const s = await scrape(m);
  assert.equal(sample(s, 'vpcnet_ledger_commit_duration_seconds_count', { outcome: 'ok' }), 1);
  assert.equal(sample(s, 'vpcnet_ledger_commit_duration_seconds_sum', { outcome: 'error' }), 0.008);
  assert.equal(sample(s, 'vpcnet_ledger_syncs_total', { place: 'loop' }), 2);
  assert.equal(sample(s, 'vpcnet_ledger_syncs_total', { place: 'pool' }), 1);
  assert.equal(sample(s, 'vpcnet_pool_growth_wait_seconds_count', { outcome: 'woken' }), 1);
  assert.equal(sample(s, 'vpcnet_pool_growth_wait_seconds_sum', { outcome: 'timeout' }), 10);
  assert.equal(sample(s, 'vpcnet_reconcile_pass_duration_seconds_count', { outcome: 'ok' }), 1);
  assert.equal(sample(s, 'vpcnet_reconcile_pass_duration_seconds_count', { outcome: 'error' }), 1);
  assert.equal(sample(s, 'vpcnet_reconcile_repairs_total', { kind: 'route' }), 3);
  assert.equal(sample(s, 'vpcnet_reconcile_repairs_total', { kind: 'podNetwork' }), 1);
  assert.equal(sample(s, 'vpcnet_reconcile_collections_total', { kind: 'snat' }), 3);
  assert.equal(m.reconcileFailures(), 1);
});

test('the registry is the agent’s own: two agents in one process keep their own series, with process metrics', async () => {
  const a = new AgentMetrics();
  const b = new AgentMetrics();
  b.collectProcessMetrics();
  a.operation('ADD', true, 1);
  const sb = await scrape(b);
  assert.equal(sample(sb, 'awscni_add_ip_req_count'), 0);
  assert.equal(sample(await scrape(a), 'awscni_add_ip_req_count'), 1);
  assert.ok((sample(sb, 'process_resident_memory_bytes') ?? 0) > 0, 'default process metrics, unprefixed');
  assert.equal(sample(await scrape(a), 'process_resident_memory_bytes'), undefined, 'only when asked');
  assert.match((await a.exposition()).contentType, /^text\/plain; version=0\.0\.4/);
});

test('ADDs that found no address count as upstream’s no_available_ip_addresses; trunk failures as pod ENI errors', async () => {
  const m = new AgentMetrics();
  assert.equal(sample(await scrape(m), 'awscni_no_available_ip_addresses'), 0, 'exported before any');
  m.noAddressAvailable();
  m.noAddressAvailable();
  m.trunkCheckFailed('start');
  m.trunkCheckFailed('loop');
  m.trunkCheckFailed('loop');
  const s = await scrape(m);
  assert.equal(sample(s, 'awscni_no_available_ip_addresses'), 2);
  assert.equal(sample(s, 'awscni_pod_eni_error_count', { fn: 'nodeInit' }), 1, 'the check before serving');
  assert.equal(sample(s, 'awscni_pod_eni_error_count', { fn: 'trunkCheck' }), 2);
});

test('the pool’s actions are in progress under upstream’s fn names until they end; a left-over ENI is an aws_utils error by EC2 code', async () => {
  const m = new AgentMetrics();
  const observer = m.poolObserver();
  const endGrow = observer.actionStarted?.('grow');
  const endSync = observer.actionStarted?.('ec2Sync');
  let s = await scrape(m);
  assert.equal(sample(s, 'awscni_ipamd_action_inprogress', { fn: 'increaseDatastorePool' }), 1);
  assert.equal(sample(s, 'awscni_ipamd_action_inprogress', { fn: 'nodeIPPoolReconcile' }), 1);
  endGrow?.();
  endGrow?.();
  observer.actionStarted?.('shrink')?.();
  s = await scrape(m);
  assert.equal(
    sample(s, 'awscni_ipamd_action_inprogress', { fn: 'increaseDatastorePool' }),
    0,
    'ended once, whatever the calls',
  );
  assert.equal(sample(s, 'awscni_ipamd_action_inprogress', { fn: 'decreaseDatastorePool' }), 0);
  assert.equal(sample(s, 'awscni_ipamd_action_inprogress', { fn: 'nodeIPPoolReconcile' }), 1);
  endSync?.();
  observer.eniLeftOver?.('eni-1', new CloudError('in use', 'InvalidNetworkInterface.InUse', false));
  observer.eniLeftOver?.('eni-2', new Error('socket hang up'));
  s = await scrape(m);
  assert.equal(
    sample(s, 'awscni_aws_utils_error_count', {
      fn: 'AllocENIDeleteErr',
      error: 'InvalidNetworkInterface.InUse',
    }),
    1,
  );
  assert.equal(sample(s, 'awscni_aws_utils_error_count', { fn: 'AllocENIDeleteErr', error: 'Error' }), 1);
});
