// Pods in a one-node lab, through the installed plugin exec'd in the node's namespace exactly as
// a runtime would: VPC addresses, reachability, DEL and cooldown, CHECK, replaced sandboxes,
// agent restart, bad input. The lab's agent runs with a 3 s cooldown so the suite stays short.
// Test turn: shared (it waits on its own lab's agents and timers; no CPU or latency bound).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  addPod,
  agentState,
  cni,
  hostLinks,
  type LabDesc,
  type LabNodeDesc,
  labDown,
  labUp,
  newPod,
  reaches,
  sh,
  type TestPod,
  uniqueLabName,
  waitCooling,
  waitFor,
} from '../lab-fixture.ts';

const COOLDOWN_S = 3;

function inSubnet(ip: string, prefix: string): boolean {
  return ip.startsWith(prefix);
}

describe('pods in a one-node lab', () => {
  const name = uniqueLabName('vpcit');
  let lab: LabDesc;
  let node: LabNodeDesc;

  before(async () => {
    await labDown(name);
    // The reconcile loop would repair drift made by hand; the CHECK test needs it to stay.
    lab = await labUp(name, [
      '--agent-env',
      `IP_COOLDOWN_PERIOD=${COOLDOWN_S}`,
      '--agent-env',
      'VPCNET_RECONCILE_SECONDS=0',
    ]);
    node = lab.nodes[0]!;
  });
  after(async () => {
    await labDown(name);
  });

  test('three pods get distinct VPC addresses and reach the VPC host and each other', async () => {
    const pods: TestPod[] = [];
    const ips: string[] = [];
    for (const k of [1, 2, 3]) {
      const pod = await newPod(name, `p${k}`);
      pods.push(pod);
      ips.push((await addPod(node, pod)).ip);
    }
    assert.equal(new Set(ips).size, 3, `addresses not distinct: ${ips.join(', ')}`);
    for (const ip of ips) assert.ok(inSubnet(ip, '10.0.'), `${ip} is not in the VPC`);
    const host = lab.vpcHosts[0]!.ip;
    for (const [i, pod] of pods.entries()) {
      assert.ok(await reaches(pod.netnsName, host), `${pod.name} cannot reach VPC host ${host}`);
      for (const [j, ip] of ips.entries()) {
        if (i !== j) assert.ok(await reaches(pod.netnsName, ip), `${pod.name} cannot reach pod ${ip}`);
      }
    }
    for (const pod of pods) assert.equal((await cni(node, 'DEL', pod)).exitCode, 0);
  });

  test('DEL releases the address, which cools down before reuse', async () => {
    const a = await newPod(name, 'cool1');
    const { ip } = await addPod(node, a);
    const del = await cni(node, 'DEL', a);
    assert.equal(del.exitCode, 0, del.stdout);
    const state = await agentState(node);
    assert.ok(!state.attachments.some((x) => x.ip === ip), 'attachment still in the ledger after DEL');
    await waitCooling(node, ip);
    const b = await newPod(name, 'cool2');
    const second = await addPod(node, b);
    assert.notEqual(second.ip, ip, 'a cooling address was handed out again');
    await waitFor(
      'cooldown to end',
      async () => {
        const s = await agentState(node);
        return s.cooling.some((c) => c.ip === ip) ? undefined : true;
      },
      (COOLDOWN_S + 10) * 1000,
    );
    await cni(node, 'DEL', b);
  });

  test('CHECK passes on a healthy pod and fails after its address is removed by hand', async () => {
    const pod = await newPod(name, 'chk');
    const { ip, result } = await addPod(node, pod);
    const ok = await cni(node, 'CHECK', pod, result);
    assert.equal(ok.exitCode, 0, ok.stdout);
    await sh(['ip', '-n', pod.netnsName, 'addr', 'del', `${ip}/32`, 'dev', 'eth0']);
    const bad = await cni(node, 'CHECK', pod, result);
    assert.notEqual(bad.exitCode, 0);
    const err = JSON.parse(bad.stdout) as { code: number; msg: string; details?: string };
    assert.equal(err.code, 110);
    assert.match(err.details ?? '', new RegExp(ip.replace(/\./g, '\\.')));
    assert.equal((await cni(node, 'DEL', pod)).exitCode, 0);
  });

  test('a stale DEL for a replaced sandbox keeps the new sandbox working', async () => {
    const uid = 'uid-replaced-0001';
    const old = await newPod(name, 'sbA', { name: 'web-0', uid });
    const neu = await newPod(name, 'sbB', { name: 'web-0', uid });
    const first = await addPod(node, old);
    const second = await addPod(node, neu);
    const state = await agentState(node);
    const vethOld = state.attachments.find((a) => a.key.containerId === old.containerId)?.hostVeth;
    const vethNew = state.attachments.find((a) => a.key.containerId === neu.containerId)?.hostVeth;
    assert.ok(vethOld && vethNew && vethOld !== vethNew, `host veths not separate: ${vethOld} / ${vethNew}`);
    assert.notEqual(first.ip, second.ip);
    const host = lab.vpcHosts[0]!.ip;
    assert.ok(await reaches(neu.netnsName, host));
    // The runtime's late DEL for the old sandbox.
    assert.equal((await cni(node, 'DEL', old)).exitCode, 0);
    assert.ok(await reaches(neu.netnsName, host), 'new sandbox lost its network after the stale DEL');
    const links = await hostLinks(node);
    assert.ok(links.includes(vethNew), 'new sandbox host veth was removed');
    assert.ok(!links.includes(vethOld), 'old sandbox host veth was left behind');
    assert.equal((await cni(node, 'CHECK', neu, second.result)).exitCode, 0);
    assert.equal((await cni(node, 'DEL', neu)).exitCode, 0);
  });

  test('the ledger survives an agent restart and pods keep working', async () => {
    const pod = await newPod(name, 'rst');
    const { ip, result } = await addPod(node, pod);
    const before = await agentState(node);
    process.kill(before.pid, 'SIGKILL');
    // The lab's supervisor restarts the agent as a DaemonSet would.
    const after = await waitFor(
      'agent restart',
      async () => {
        const s = await agentState(node);
        return s.pid !== before.pid ? s : undefined;
      },
      30000,
    );
    assert.ok(after.attachments.some((a) => a.ip === ip && a.key.containerId === pod.containerId));
    assert.ok(await reaches(pod.netnsName, lab.vpcHosts[0]!.ip));
    assert.equal((await cni(node, 'CHECK', pod, result)).exitCode, 0);
    // The restarted agent knows the address is taken.
    const other = await newPod(name, 'rst2');
    assert.notEqual((await addPod(node, other)).ip, ip);
    await cni(node, 'DEL', other);
    await cni(node, 'DEL', pod);
  });

  test('with the agent unreachable, ADD fails with code 11 and DEL is spooled, then applied when the agent starts', async () => {
    const pod = await newPod(name, 'spl');
    const { ip } = await addPod(node, pod);
    const { readFile, readdir, rename } = await import('node:fs/promises');
    const list = JSON.parse(await readFile(`${node.cniConfDir}/10-vpcnet.conflist`, 'utf8')) as {
      plugins: { delSpoolDir?: string }[];
    };
    const spoolDir = list.plugins[0]?.delSpoolDir;
    assert.ok(spoolDir, 'the lab conflist names a spool dir');
    // The agent is "down" for the plugin: its socket is not where the config says.
    const before = await agentState(node);
    await rename(node.agentSocket, `${node.agentSocket}.away`);
    try {
      const other = await newPod(name, 'spl2');
      const add = await cni(node, 'ADD', other);
      assert.equal(add.exitCode, 1);
      const err = JSON.parse(add.stdout) as { code: number; msg: string };
      assert.equal(err.code, 11);
      assert.ok(err.msg.includes(node.agentSocket), `message does not name the socket: ${err.msg}`);
      const del = await cni(node, 'DEL', pod);
      assert.equal(del.exitCode, 0, del.stdout);
      assert.equal((await readdir(spoolDir)).filter((f) => f.endsWith('.del.json')).length, 1);
    } finally {
      // The agent restarts (as after a crash) and drains the spool before it serves.
      process.kill(before.pid, 'SIGKILL');
    }
    const after = await waitFor(
      'agent restart',
      async () => {
        const s = await agentState(node);
        return s.pid !== before.pid ? s : undefined;
      },
      30000,
    );
    assert.ok(
      !after.attachments.some((a) => a.key.containerId === pod.containerId),
      'spooled DEL was not applied',
    );
    assert.ok(
      after.cooling.some((c) => c.ip === ip),
      'the spooled DEL did not release the address',
    );
    assert.deepEqual(await readdir(spoolDir), []);
    assert.ok(
      !(await hostLinks(node)).some(
        (l) => after.attachments.every((a) => a.hostVeth !== l) && l.startsWith('vpc'),
      ),
    );
  });

  describe('bad input gets the right CNI error code and changes nothing', () => {
    async function expectError(env: Record<string, string>, stdin: string, code: number): Promise<void> {
      // The pool may attach an ENI meanwhile (its paced warm-up: a new ethN); a failed ADD must
      // leave every other link as it was, and take none of the node's away.
      const isEni = (l: string) => /^eth\d+$/.test(l);
      const beforeState = await agentState(node);
      const beforeLinks = await hostLinks(node);
      const { execPlugin } = await import('../../src/lab/cni-runtime.ts');
      const base = {
        nodeNetns: node.netns,
        cniBinDir: node.cniBinDir,
        command: 'ADD' as const,
        containerId: 'badinput0001',
        netns: '/var/run/netns/nonexistent',
        ifName: 'eth0',
      };
      const out = await execPlugin({ ...base, ...env } as typeof base, 'vpcnet', stdin);
      assert.notEqual(out.exitCode, 0, `expected failure, got ${out.stdout}`);
      const err = JSON.parse(out.stdout) as { code: number; msg: string };
      assert.equal(err.code, code, `wrong code for ${JSON.stringify(env)}: ${out.stdout}`);
      const afterState = await agentState(node);
      assert.equal(afterState.attachments.length, beforeState.attachments.length);
      assert.equal(afterState.pool.stats.assigned, beforeState.pool.stats.assigned);
      const afterLinks = await hostLinks(node);
      assert.deepEqual(
        afterLinks.filter((l) => !isEni(l)),
        beforeLinks.filter((l) => !isEni(l)),
      );
      for (const l of beforeLinks.filter(isEni)) assert.ok(afterLinks.includes(l), `the node lost ${l}`);
    }
    let pod: TestPod;
    before(async () => {
      pod = await newPod(name, 'bad');
      const { readFile } = await import('node:fs/promises');
      const list = JSON.parse(await readFile(`${node.cniConfDir}/10-vpcnet.conflist`, 'utf8')) as {
        plugins: Record<string, unknown>[];
      };
      Object.assign(confWithSocket, { ...list.plugins[0], cniVersion: '1.0.0', name: 'vpcnet' });
    });
    const confWithSocket: Record<string, unknown> = {};
    test('malformed JSON → 6', async () => {
      await expectError({ netns: pod.netnsPath }, `${JSON.stringify(confWithSocket).slice(0, -1)},"x": }`, 6);
    });
    test('unknown command → 4', async () => {
      await expectError({ command: 'FROB', netns: pod.netnsPath }, JSON.stringify(confWithSocket), 4);
    });
    test('invalid container ID → 4', async () => {
      await expectError({ containerId: '-bad/id', netns: pod.netnsPath }, JSON.stringify(confWithSocket), 4);
    });
    test('invalid ifName → 4', async () => {
      await expectError({ ifName: 'eth0/../x', netns: pod.netnsPath }, JSON.stringify(confWithSocket), 4);
    });
    test('missing CNI_NETNS → 4', async () => {
      await expectError({ netns: '' }, JSON.stringify(confWithSocket), 4);
    });
    test('a netns that does not exist → 3', async () => {
      await expectError({ netns: '/var/run/netns/does-not-exist-vpcit' }, JSON.stringify(confWithSocket), 3);
    });
    test('the node’s own namespace as CNI_NETNS → 4, and the node keeps its links', async () => {
      await expectError({ netns: `/var/run/netns/${node.netns}` }, JSON.stringify(confWithSocket), 4);
    });
    test('unsupported cniVersion → 1', async () => {
      await expectError(
        { netns: pod.netnsPath },
        JSON.stringify({ ...confWithSocket, cniVersion: '9.9.9' }),
        1,
      );
    });
  });
});
