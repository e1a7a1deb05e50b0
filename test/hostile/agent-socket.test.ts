// A lab node's agent socket under hostile clients: a request over the body limit sent by the real
// plugin is refused by the plugin itself before it connects (code 7), and 200 concurrent connections —
// silent, one byte a second, malformed, oversized, and real plugin runs — each get an answer while
// the agent keeps serving the node's live pod. Nothing of the node changes meanwhile.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pieces, rawExchange, rawPost } from '../../src/agent/testing/raw-rpc-client.ts';
import { execPlugin, type PluginOutput } from '../../src/lab/cni-runtime.ts';
import {
  addPod,
  cni,
  type LabDesc,
  type LabNodeDesc,
  labDown,
  labUp,
  newPod,
  repoRoot,
  type TestPod,
  uniqueLabName,
} from '../lab-fixture.ts';
import { type NodeSnapshot, snapshotDifference, snapshotNode, steadySnapshot } from './node-snapshot.ts';

const MiB = 1 << 20;

describe('a lab agent socket under hostile clients', () => {
  const lab = uniqueLabName('vpchx');
  const spoolDir = mkdtempSync(join(tmpdir(), 'vpchx-socket-spool-'));
  let desc: LabDesc;
  let node: LabNodeDesc;
  let sentinel: TestPod;
  let baseline: NodeSnapshot;

  // The TypeScript forwarder (bin/vpcnet-js), installed as `vpcnet` in a dir of its own.
  const jsBinDir = mkdtempSync(join(tmpdir(), 'vpchx-js-plugin-'));
  symlinkSync(join(repoRoot, 'bin', 'vpcnet-js'), join(jsBinDir, 'vpcnet'));

  /** The installed plugin (or `binDir`'s) with `command` for container `id`, the node's config plus `extra`. */
  const plugin = (
    command: 'ADD' | 'DEL' | 'CHECK',
    id: string,
    extra: Record<string, unknown> = {},
    binDir = node.cniBinDir,
  ) =>
    execPlugin(
      {
        nodeNetns: node.netns,
        cniBinDir: binDir,
        command,
        containerId: id,
        netns: sentinel.netnsPath,
        ifName: 'eth0',
      },
      'vpcnet',
      JSON.stringify({
        cniVersion: '1.0.0',
        name: 'vpcnet',
        type: 'vpcnet',
        agentSocket: node.agentSocket,
        delSpoolDir: spoolDir,
        ...extra,
      }),
    );

  before(async () => {
    desc = await labUp(lab);
    node = desc.nodes[0]!;
    sentinel = await newPod(lab, 'sentinel');
    await addPod(node, sentinel);
    baseline = await steadySnapshot(node);
  });

  after(async () => {
    await labDown(lab);
    rmSync(spoolDir, { recursive: true, force: true });
    rmSync(jsBinDir, { recursive: true, force: true });
  });

  test('a request over 1 MiB from either forwarder is refused with code 7 and neither applied nor spooled', async () => {
    // 400,000 quotes: 800 KB of stdin (under the 1 MiB limit), 1.6 MB once escaped in the request:
    // the forwarder refuses it before it connects, as the agent would (one limit, MAX_REQUEST_BYTES).
    const pad = { 'x-pad': '"'.repeat(400_000) };
    for (const command of ['ADD', 'DEL', 'CHECK'] as const) {
      const out = await plugin(command, sentinel.containerId, pad);
      assert.equal(out.exitCode, 1, `${command}: ${out.stdout}`);
      const err = JSON.parse(out.stdout) as { code: number; msg: string };
      assert.equal(err.code, 7, command);
      assert.equal(err.msg, 'request to the vpcnet agent is larger than 1048576 bytes');
      // (Its details count a different CNI_PATH: the dir it is installed in.)
      const js = await plugin(command, sentinel.containerId, pad, jsBinDir);
      assert.equal(js.exitCode, 1, `${command}: the TypeScript forwarder: ${js.stdout}`);
      const { details: _d, ...jsErr } = JSON.parse(js.stdout) as {
        code: number;
        msg: string;
        details?: string;
      };
      assert.deepEqual(jsErr, { cniVersion: '1.0.0', code: 7, msg: err.msg }, command);
    }
    assert.deepEqual(readdirSync(spoolDir), []);
    assert.equal(
      snapshotDifference(baseline, await snapshotNode(node)),
      undefined,
      'the sentinel survived the DEL',
    );
  });

  test('200 concurrent connections each get an answer while the live pod is served', async () => {
    const request = rawPost('/v1/cni', JSON.stringify({ env: { CNI_COMMAND: 'CHECK' }, stdin: '{}' }));
    const oversized = rawPost('/v1/cni', JSON.stringify({ env: {}, stdin: 'o'.repeat(MiB + 10) }));
    const kinds = ['silent', 'trickle', 'malformed', 'oversized', 'plugin'] as const;
    type Kind = (typeof kinds)[number];
    let pending = 0;
    const clients = Array.from({ length: 200 }, (_, k) => {
      const kind: Kind = kinds[k % kinds.length]!;
      const answer: Promise<PluginOutput | Awaited<ReturnType<typeof rawExchange>>> =
        kind === 'plugin'
          ? plugin(k % 2 === 0 ? 'CHECK' : 'DEL', `unknown${k}`)
          : rawExchange(
              node.agentSocket,
              kind === 'silent'
                ? []
                : kind === 'trickle'
                  ? pieces(request, 1)
                  : [kind === 'malformed' ? rawPost('/v1/cni', '{"env":{},"stdin":') : oversized],
              { gapMs: 1000, timeoutMs: 60_000 },
            );
      pending++;
      void answer.finally(() => pending--);
      return { kind, k, answer };
    });
    // The live pod is served while all of that is going on.
    const check = await cni(node, 'CHECK', sentinel);
    assert.equal(check.exitCode, 0, check.stdout);
    assert.ok(pending > 0, 'the sentinel was served before every hostile client was done');
    for (const { kind, k, answer } of clients) {
      const out = await answer;
      const label = `client ${k} (${kind})`;
      if ('exitCode' in out) {
        // CHECK of an unknown container: 3; DEL of one: success.
        assert.equal(out.exitCode, k % 2 === 0 ? 1 : 0, `${label}: ${out.stdout}`);
        if (k % 2 === 0) assert.equal((JSON.parse(out.stdout) as { code: number }).code, 3, label);
        continue;
      }
      assert.equal(out.closedByServer, true, label);
      const expected: Record<Exclude<Kind, 'plugin'>, number> = {
        silent: 408,
        trickle: 408,
        malformed: 400,
        oversized: 413,
      };
      assert.equal(out.status, expected[kind as Exclude<Kind, 'plugin'>], label);
      // The head timeout (10 s) cuts the slow ones, well before the request timeout (30 s).
      if (kind === 'silent' || kind === 'trickle')
        assert.ok(out.ms < 25_000, `${label} lasted ${Math.round(out.ms)} ms`);
      if (kind === 'malformed' || kind === 'oversized') {
        const answer = JSON.parse(out.body) as { exitCode: number; stdout: string };
        assert.equal(answer.exitCode, 1, label);
        const code = (JSON.parse(answer.stdout) as { code: number }).code;
        assert.equal(code, kind === 'oversized' ? 7 : 6, label);
      }
    }
    assert.equal(snapshotDifference(baseline, await snapshotNode(node)), undefined);
    assert.deepEqual(readdirSync(spoolDir), [], 'no DEL found the agent unreachable');
    const fresh = await newPod(lab, 'fresh');
    await addPod(node, fresh);
    assert.equal((await cni(node, 'DEL', fresh)).exitCode, 0);
  });
});
