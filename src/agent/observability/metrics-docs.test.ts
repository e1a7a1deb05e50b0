// docs/metrics.md against what agents really serve: its tables list exactly the series a scrape of
// an IPv4 agent (with the dead-pod GC) and of an IPv6 agent show together, each with its type;
// the upstream table is exactly upstream's series, with upstream's labels.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { familyTypes } from '../../metrics/testing/exposition.ts';
import { FakePodPresence } from '../../pods/testing/fake-pod-presence.ts';
import { agentWorlds } from '../testing/agent-world.ts';
import { httpGet, type ObservedNode, observedNode } from './testing/observed-agent.ts';
import { UPSTREAM_SERIES } from './testing/upstream-series.ts';

const worlds = agentWorlds();

interface DocRow {
  readonly name: string;
  readonly type: string;
  readonly labels: readonly string[];
}

/** The rows of the table under `### heading` in docs/metrics.md. */
function tableUnder(doc: string, heading: string): DocRow[] {
  const section = doc.split(`\n### ${heading}\n`)[1]?.split('\n### ')[0] ?? '';
  return [...section.matchAll(/^\| `([a-z0-9_:]+)` \| (\w+) \|([^|]*)\|/gm)].map((m) => ({
    name: m[1]!,
    type: m[2]!,
    labels: [...m[3]!.matchAll(/`(\w+)`/g)].map((l) => l[1]!),
  }));
}

async function served(node: ObservedNode, extra: Parameters<ObservedNode['start']>[1]) {
  const agent = await node.start({}, extra);
  try {
    return familyTypes((await httpGet(agent.endpoints.metrics?.address.port ?? 0, '/metrics')).body);
  } finally {
    await agent.stop();
  }
}

test('docs/metrics.md lists exactly the series agents serve, with their types; its upstream table is upstream’s series and labels', async () => {
  const doc = await readFile(new URL('../../../docs/metrics.md', import.meta.url), 'utf8');
  const upstream = tableUnder(doc, "Upstream's metrics");
  const own = tableUnder(doc, "vpcnet's own");
  const ipv4 = await served(await observedNode(worlds), { podPresence: new FakePodPresence() });
  const ipv6 = await served(
    await observedNode(
      worlds,
      { ENABLE_IPv6: 'true', ENABLE_PREFIX_DELEGATION: 'true' },
      { ipv6Subnet: '2001:db8:5e00:0' },
    ),
    {},
  );
  // Process and Node.js metrics are prom-client's own, documented by family, not one by one.
  const defaults = new Registry();
  collectDefaultMetrics({ register: defaults });
  const processMetrics = new Set(defaults.getMetricsAsArray().map((m) => m.name));
  const servedTypes = new Map([...ipv4, ...ipv6].filter(([name]) => !processMetrics.has(name)));

  const documented = new Map([...upstream, ...own].map((r) => [r.name, r.type]));
  assert.deepEqual(
    {
      undocumented: [...servedTypes.keys()].filter((n) => !documented.has(n)).sort(),
      notServed: [...documented.keys()].filter((n) => !servedTypes.has(n)).sort(),
    },
    { undocumented: [], notServed: [] },
  );
  for (const [name, type] of servedTypes) assert.equal(documented.get(name), type, `${name}'s type`);

  assert.deepEqual(
    upstream
      .map((r) => ({ name: r.name, type: r.type, labels: r.labels }))
      .sort((a, b) => a.name.localeCompare(b.name)),
    UPSTREAM_SERIES.map((u) => ({ name: u.name, type: u.type, labels: [...u.labels] })).sort((a, b) =>
      a.name.localeCompare(b.name),
    ),
    'the upstream table: upstream’s names, types and label names',
  );
  assert.deepEqual(
    own.filter((r) => !r.name.startsWith('vpcnet_')).map((r) => r.name),
    [],
    'vpcnet’s own series are named vpcnet_*',
  );
});
