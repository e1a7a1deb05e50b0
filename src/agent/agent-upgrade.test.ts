// Upgrade: an agent starts on the ledger the previous version wrote (schema 3, before the journal;
// the fixture was written by that agent, src/ledger/testing/fixtures/README.md), keeps every
// attachment and cooldown, and writes the current schema from then on. A ledger of a newer schema
// (a downgrade) is refused as it is: the agent does not start, and the file is left untouched.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { agentConfigFromEnv } from '../config/agent-config.ts';
import { Dataplane } from '../dataplane/dataplane.ts';
import { FakeKernel } from '../dataplane/testing/fake-kernel.ts';
import { silentLogger } from '../infra/log.ts';
import { FakeCloud } from '../ipam/testing/fake-cloud.ts';
import { LEDGER_SCHEMA_VERSION } from '../ledger/format/snapshot.ts';
import { Ledger } from '../ledger/ledger.ts';
import { FileLedgerStore } from '../ledger/storage/store.ts';
import { noPodSource } from '../pods/watch/pod-source.ts';
import { startAgent } from './agent.ts';
import { agentEnv } from './testing/agent-world.ts';
import { cniRequest, ipOf } from './testing/cni-request.ts';

/** Where the agent that wrote the fixture had its pods' namespaces. */
const FIXTURE_NETNS_DIR = '/tmp/vpcnet-ledger-fixture-netns';

const fixtureUrl = new URL('../ledger/testing/fixtures/agent-ledger.json.v3', import.meta.url);

interface V3File {
  schemaVersion: number;
  attachments: { key: { containerId: string; ifName: string }; resources: { kind: string; ip?: string }[] }[];
  cooling: { ip: string; freedAt: number }[];
}

/** A state dir holding the fixture, its namespace paths moved into `dir` (each file exists). */
async function stateWithFixture(dir: string, edit: (text: string) => string = (t) => t): Promise<string> {
  const netnsDir = join(dir, 'netns');
  await mkdir(netnsDir, { recursive: true });
  for (const id of ['c1', 'c2']) await writeFile(join(netnsDir, `netns-${id}`), '');
  const text = (await readFile(fixtureUrl, 'utf8')).replaceAll(FIXTURE_NETNS_DIR, netnsDir);
  await mkdir(join(dir, 'state'), { recursive: true, mode: 0o700 });
  const ledgerPath = join(dir, 'state', 'ledger.json');
  await writeFile(ledgerPath, edit(text));
  return netnsDir;
}

function agentOn(dir: string, now: () => number) {
  const config = agentConfigFromEnv(agentEnv(dir, { IP_COOLDOWN_PERIOD: '30' }));
  return startAgent({
    config,
    targets: config.targets,
    // The world the fixture's agent ran in: one ENI, 11 secondary addresses.
    cloud: new FakeCloud({ limits: { maxEnis: 1, ipsPerEni: 12 }, primarySecondaryIps: 11 }),
    dataplane: new Dataplane(new FakeKernel()),
    pods: noPodSource,
    log: silentLogger,
    now,
    notANetworkNamespace: async () => undefined,
    poolIntervalMs: 60_000,
  });
}

test('an agent starts on the previous schema’s ledger, keeps every attachment and cooldown, serves from them, and writes the current schema', async () => {
  const fixture = JSON.parse(await readFile(fixtureUrl, 'utf8')) as V3File;
  assert.equal(fixture.schemaVersion, 3);
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-upgrade-'));
  try {
    const netnsDir = await stateWithFixture(dir);
    // The clock of a restart soon after the old agent stopped: web-2's address still cools.
    const cooled = fixture.cooling[0];
    assert.ok(cooled !== undefined);
    const t0 = Date.now();
    const agent = await agentOn(dir, () => cooled.freedAt + 1000 + (Date.now() - t0));
    const ipOfAtt = (a: V3File['attachments'][number]) =>
      a.resources.find((r) => r.kind === 'vpcAddress')?.ip;
    try {
      const expected = fixture.attachments.map((a) => [a.key.containerId, a.key.ifName, ipOfAtt(a)]);
      assert.equal(expected.length, 3);
      const kept = agent.ledger
        .list()
        .map((a) => [a.key.containerId, a.key.ifName, agent.ledger.addressOf(a)?.ip]);
      assert.deepEqual(kept.sort(), expected.sort());
      assert.deepEqual(
        agent.ledger.coolingAddresses().map((c) => c.ip),
        [cooled.ip],
      );
      // A DEL works from the old agent's record: exactly that attachment goes.
      const del = await agent.cni(cniRequest('DEL', 'c2', join(netnsDir, 'netns-c2'), 'web-1', 'uid-web-1'));
      assert.equal(del.exitCode, 0, del.stdout);
      assert.deepEqual(
        agent.ledger
          .list()
          .map((a) => `${a.key.containerId}/${a.key.ifName}`)
          .sort(),
        ['c1/eth0', 'c1/eth1'],
      );
      // No address of the old agent's is handed out again: neither a pod's nor the cooling one.
      await writeFile(join(netnsDir, 'netns-c4'), '');
      const add = await agent.cni(cniRequest('ADD', 'c4', join(netnsDir, 'netns-c4'), 'web-3', 'uid-web-3'));
      assert.equal(add.exitCode, 0, add.stdout);
      const taken = new Set([...expected.map((e) => e[2]), cooled.ip]);
      assert.ok(!taken.has(ipOf(add.stdout)), `${ipOf(add.stdout)} was handed out again`);
    } finally {
      await agent.stop();
    }
    const written = JSON.parse(await readFile(join(dir, 'state', 'ledger.json'), 'utf8')) as {
      schemaVersion: number;
      journal?: unknown;
    };
    assert.equal(written.schemaVersion, LEDGER_SCHEMA_VERSION);
    assert.ok(written.journal !== undefined, 'the snapshot names its journal');
    const reopened = await Ledger.open(new FileLedgerStore(join(dir, 'state', 'ledger.json')), {
      now: Date.now,
    });
    assert.deepEqual(
      reopened
        .list()
        .map((a) => `${a.key.containerId}/${a.key.ifName}`)
        .sort(),
      ['c1/eth0', 'c1/eth1', 'c4/eth0'],
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a ledger of a newer schema is refused with a message that says so, and is neither set aside nor rewritten', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-upgrade-'));
  try {
    const newer = LEDGER_SCHEMA_VERSION + 1;
    await stateWithFixture(dir, (text) => text.replace('"schemaVersion":3', `"schemaVersion":${newer}`));
    const before = await readFile(join(dir, 'state', 'ledger.json'), 'utf8');
    assert.ok(before.includes(`"schemaVersion":${newer}`));
    await assert.rejects(
      agentOn(dir, Date.now),
      new RegExp(
        `schema ${newer}, written by a newer vpcnet agent; this agent reads schemas up to ${LEDGER_SCHEMA_VERSION}`,
      ),
    );
    assert.equal(await readFile(join(dir, 'state', 'ledger.json'), 'utf8'), before);
    assert.deepEqual(await readdir(join(dir, 'state')), ['ledger.json']);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
