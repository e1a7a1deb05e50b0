import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { parseExposition, sample } from '../../metrics/testing/exposition.ts';
import { StartMetrics } from './start-metrics.ts';

async function scrape(r: Registry) {
  return parseExposition(await r.metrics());
}

test('the node’s initialisation is timed and in progress while it runs; the start is timed from the process’s start', async () => {
  const clock = { ms: 1200 };
  const r = new Registry();
  const m = new StartMetrics(r, () => clock.ms);
  let during: number | undefined;
  const out = await m.nodeInitialization(true, async () => {
    during = sample(await scrape(r), 'awscni_ipamd_action_inprogress', { fn: 'nodeInit' });
    clock.ms += 2500;
    return 'ready';
  });
  assert.equal(out, 'ready');
  assert.equal(during, 1, 'nodeInit in progress while it runs');
  clock.ms += 500;
  m.served(true);
  const s = await scrape(r);
  assert.equal(sample(s, 'awscni_ipamd_action_inprogress', { fn: 'nodeInit' }), 0);
  assert.equal(sample(s, 'awscni_ipamd_node_initialization_duration_seconds_sum', { success: 'true' }), 2.5);
  assert.equal(sample(s, 'awscni_ipamd_node_initialization_duration_seconds_count', { success: 'true' }), 1);
  const ok = { success: 'true', with_api_server: 'true', failure_reason: '' };
  assert.equal(sample(s, 'awscni_ipamd_startup_duration_seconds_sum', ok), 4.2, 'from the process start');
  assert.equal(sample(s, 'awscni_ipamd_startup_duration_seconds_bucket', { ...ok, le: '5' }), 1);
  assert.equal(sample(s, 'awscni_ipamd_startup_duration_seconds_bucket', { ...ok, le: '2.5' }), 0);
});

test('a failed initialisation is observed as a failed start, ends its action, and is thrown on', async () => {
  const clock = { ms: 100 };
  const r = new Registry();
  const m = new StartMetrics(r, () => clock.ms);
  await assert.rejects(
    m.nodeInitialization(false, async () => {
      clock.ms += 300;
      throw new Error('DescribeNetworkInterfaces: UnauthorizedOperation');
    }),
    /UnauthorizedOperation/,
  );
  const s = await scrape(r);
  assert.equal(sample(s, 'awscni_ipamd_node_initialization_duration_seconds_sum', { success: 'false' }), 0.3);
  assert.equal(
    sample(s, 'awscni_ipamd_startup_duration_seconds_sum', {
      success: 'false',
      with_api_server: 'false',
      failure_reason: 'node_initialization',
    }),
    0.4,
  );
  assert.equal(sample(s, 'awscni_ipamd_action_inprogress', { fn: 'nodeInit' }), 0);
});

test('build_info is 1, labelled with package.json’s version and the runtime’s', async () => {
  const pkg = JSON.parse(await readFile(new URL('../../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  const r = new Registry();
  new StartMetrics(r);
  const s = await scrape(r);
  assert.equal(sample(s, 'awscni_build_info', { version: pkg.version, goversion: process.version }), 1);
});
