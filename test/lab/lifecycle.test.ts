// The agent's lifecycle in a one-node lab: SIGTERM to the node's agent (by the PID the lab
// records) stops it gracefully (each phase logged, exit status 0); pods keep their network while
// no agent runs; a DEL meanwhile is spooled by the plugin and an ADD asked to retry; the restarted
// agent applies the spooled DEL and leaves the other pods whole; and a startup taint put on the
// node while the agent was down is removed once the new agent serves, with an Event on the node.
// The lab's supervisor would restart the agent at once (as a DaemonSet would), so it is paused
// (SIGSTOP) while the agent is down and resumed (SIGCONT) to restart it.
// Test turn: shared (it waits on its own lab's agents and timers; no CPU or latency bound).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { labLayout } from '../../src/lab/layout.ts';
import {
  isRecordedProcessAlive,
  type ProcessRecord,
  readRecords,
} from '../../src/lab/processes/processes.ts';
import { unixHttp } from '../../src/lab/unix-http.ts';
import { addLabNodeTaint, labEvents, labNodeTaintKeys } from '../../src/lab/verbs/node-taint.ts';
import {
  addPod,
  agentState,
  cni,
  type LabDesc,
  type LabNodeDesc,
  labDown,
  labUp,
  newPod,
  reaches,
  uniqueLabName,
  waitFor,
} from '../lab-fixture.ts';

const STARTUP_TAINT = 'node.vpcnet.io/agent-not-ready';

/** The stop's log lines, in the order they must come. */
const STOP_PHASES = [
  'stopping',
  'stop: refusing new requests',
  'stop: requests in flight answered',
  'stop: background loops stopped',
  'stop: ledger durable',
  'stop: netlink helper closed',
  'stopped',
];

type LogLine = { msg: string; [field: string]: unknown };

async function jsonLines(file: string): Promise<LogLine[]> {
  const text = await readFile(file, 'utf8');
  return text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);
}

describe('graceful stop and restart of a node agent', () => {
  const name = uniqueLabName('lc');
  let lab: LabDesc;
  let node: LabNodeDesc;
  let paused: ProcessRecord | undefined;

  before(async () => {
    await labDown(name);
    lab = await labUp(name, ['--agent-env', 'IP_COOLDOWN_PERIOD=3']);
    node = lab.nodes[0]!;
  });
  after(async () => {
    // Never leave the supervisor stopped: lab down signals it.
    if (paused !== undefined && isRecordedProcessAlive(paused)) process.kill(paused.pid, 'SIGCONT');
    await labDown(name);
  });

  test('SIGTERM stops the agent in phases with exit 0; pods keep their network meanwhile; a DEL spooled then is applied by the next agent, which also removes the startup taint and reports it', async () => {
    const layout = labLayout(name, 1);
    const nodeFiles = layout.nodes[0]!;
    const adminSocket = layout.emulator.adminSocket;
    const [p1, p2, p3] = [await newPod(name, 'a'), await newPod(name, 'b'), await newPod(name, 'c')];
    const ip1 = (await addPod(node, p1)).ip;
    const ip2 = (await addPod(node, p2)).ip;
    await addPod(node, p3);
    assert.ok(await reaches(p1.netnsName, ip2), 'pods do not reach each other to begin with');
    const records = await readRecords(layout.files.pidsDir);
    const agent = records.find((r) => r.role === `agent-${node.name}`);
    const supervisor = records.find((r) => r.role === 'supervisor');
    assert.ok(agent !== undefined && isRecordedProcessAlive(agent), 'the lab records its running agent');
    assert.ok(
      supervisor !== undefined && isRecordedProcessAlive(supervisor),
      'the lab records its supervisor',
    );
    const logLinesBefore = (await jsonLines(nodeFiles.agentLog)).length;

    process.kill(supervisor.pid, 'SIGSTOP');
    paused = supervisor;
    process.kill(agent.pid, 'SIGTERM');
    await waitFor(
      'the agent to exit',
      async () => (isRecordedProcessAlive(agent) ? undefined : true),
      30_000,
    );
    const stopLines = (await jsonLines(nodeFiles.agentLog))
      .slice(logLinesBefore)
      .filter((l) => STOP_PHASES.includes(l.msg));
    assert.deepEqual(
      stopLines.map((l) => l.msg),
      STOP_PHASES,
      'the stop did not log each phase once, in order',
    );
    assert.equal(stopLines.at(-1)?.exitCode, 0);
    assert.equal(existsSync(node.agentSocket), false, 'the stopped agent left its socket behind');

    // No agent runs: the pods' network is the kernel's, and stays.
    assert.ok(await reaches(p1.netnsName, ip2), 'p1 lost p2 while no agent ran');
    assert.ok(await reaches(p2.netnsName, ip1), 'p2 lost p1 while no agent ran');
    assert.ok(await reaches(p1.netnsName, lab.vpcHosts[0]!.ip), 'p1 lost the VPC while no agent ran');
    const del = await cni(node, 'DEL', p3);
    assert.equal(del.exitCode, 0, del.stdout);
    const spooled = (await readdir(nodeFiles.spoolDir)).filter((f) => f.endsWith('.del.json'));
    assert.equal(spooled.length, 1, `the DEL was not spooled: ${spooled.join(', ')}`);
    const p4 = await newPod(name, 'd');
    const add = await cni(node, 'ADD', p4);
    assert.equal(add.exitCode, 1);
    assert.equal((JSON.parse(add.stdout) as { code: number }).code, 11, add.stdout);
    // The node carries the startup taint before the next agent serves (a kubelet registered
    // with --register-with-taints would), beside a taint of someone else's.
    await addLabNodeTaint(adminSocket, node.name, { key: 'example.com/dedicated', effect: 'NoSchedule' });
    await addLabNodeTaint(adminSocket, node.name, { key: STARTUP_TAINT, effect: 'NoSchedule' });
    assert.deepEqual(await labNodeTaintKeys(adminSocket, node.name), [
      'example.com/dedicated',
      STARTUP_TAINT,
    ]);

    process.kill(supervisor.pid, 'SIGCONT');
    paused = undefined;
    await waitFor(
      'the restarted agent to serve',
      async () => {
        const now = (await readRecords(layout.files.pidsDir)).find((r) => r.role === `agent-${node.name}`);
        if (now === undefined || now.pid === agent.pid || !isRecordedProcessAlive(now)) return undefined;
        return (await unixHttp(node.agentSocket, 'GET', '/v1/healthz')).status === 200 ? true : undefined;
      },
      60_000,
    );
    const exits = (await jsonLines(layout.files.supervisorLog)).filter(
      (l) => l.msg === 'agent exited; restarting' && l.node === node.name,
    );
    assert.deepEqual(
      exits.map((l) => [l.code, l.signal]),
      [[0, null]],
      'the agent did not exit with status 0',
    );

    // The spooled DEL was applied before serving; the other pods are whole.
    assert.deepEqual(await readdir(nodeFiles.spoolDir), []);
    const state = await agentState(node);
    const live = state.attachments.map((a) => a.key.containerId).sort();
    assert.deepEqual(live, [p1.containerId, p2.containerId].sort());
    assert.ok(await reaches(p1.netnsName, ip2), 'p1 lost p2 after the restart');

    await waitFor(
      'the startup taint to be removed',
      async () =>
        (await labNodeTaintKeys(adminSocket, node.name)).includes(STARTUP_TAINT) ? undefined : true,
      30_000,
    );
    assert.deepEqual(await labNodeTaintKeys(adminSocket, node.name), ['example.com/dedicated']);
    const events = await waitFor('the node event', async () => {
      const found = (await labEvents(adminSocket)).filter(
        (e) => e.reason === 'StartupTaintRemoved' && e.involvedObject.name === node.name,
      );
      return found.length > 0 ? found : undefined;
    });
    assert.equal(events.length, 1);
    assert.equal(events[0]?.involvedObject.kind, 'Node');
    // The agent's state counts what its event queue sent and dropped.
    const figures = (
      (await agentState(node)) as unknown as { kubeEvents?: { sent: number; dropped: number } }
    ).kubeEvents;
    assert.ok(figures !== undefined && figures.sent >= 1 && figures.dropped === 0, JSON.stringify(figures));

    assert.equal((await cni(node, 'DEL', p1)).exitCode, 0);
    assert.equal((await cni(node, 'DEL', p2)).exitCode, 0);
  });
});
