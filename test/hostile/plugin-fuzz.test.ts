// Property-based fuzzing of env + stdin through the real plugin (bin/vpcnet, installed in a lab
// node) against the node's running agent, exec'd in the node's namespace as a runtime does. Every
// request carries at least one defect, so every one must be refused: a CNI error object on stdout
// with a code that fits one of its defects and the request's cniVersion, a non-zero exit, the
// agent's ledger and pool and the node's kernel exactly as before, nothing spooled. The node has a
// live attachment (the sentinel) that many requests aim at; it must keep working throughout.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import {
  addPod,
  cni,
  type LabDesc,
  type LabNodeDesc,
  labDown,
  labUp,
  newPod,
  reaches,
  type TestPod,
  uniqueLabName,
} from '../lab-fixture.ts';
import type { FuzzTarget, HostileRequest } from './fuzz/draft.ts';
import { hostileRequests } from './fuzz/hostile-requests.ts';
import { snapshotDifference, snapshotNode, steadySnapshot } from './node-snapshot.ts';

/**
 * Cases per run: 600 in CI's exhaustive run, 250 in a plain `npm test` (each case execs the plugin
 * and reads the node back, ~70 ms); VPCNET_FUZZ_RUNS and VPCNET_FUZZ_SEED repeat or extend a run.
 */
const RUNS = Number(process.env.VPCNET_FUZZ_RUNS ?? (process.env.VPCNET_TEST_EXHAUSTIVE === '1' ? 600 : 250));
const SEED =
  process.env.VPCNET_FUZZ_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.VPCNET_FUZZ_SEED);

interface PluginRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** The installed plugin in the node's namespace, with exactly this environment (and PATH). */
function execInNode(node: LabNodeDesc, req: HostileRequest): Promise<PluginRun> {
  return new Promise((resolve, reject) => {
    const child = spawn('ip', ['netns', 'exec', node.netns, join(node.cniBinDir, 'vpcnet')], {
      env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', ...req.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.on('error', reject);
    child.on('close', (code) =>
      resolve({
        code,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      }),
    );
    child.stdin.on('error', () => {});
    child.stdin.end(req.stdin);
  });
}

function describeCase(req: HostileRequest): string {
  const stdin = req.stdin.toString('utf8');
  return [
    `${req.command} with ${req.defects.map((d) => d.label).join(' + ')}`,
    `env: ${JSON.stringify(req.env).slice(0, 400)}`,
    `stdin: ${JSON.stringify(stdin.slice(0, 400))}${stdin.length > 400 ? ` (${stdin.length} chars)` : ''}`,
  ].join('\n');
}

describe('hostile requests through the real plugin against a running agent', () => {
  const lab = uniqueLabName('vpchx');
  const spoolDir = mkdtempSync(join(tmpdir(), 'vpchx-fuzz-spool-'));
  let desc: LabDesc;
  let node: LabNodeDesc;
  let sentinel: TestPod;
  let sentinelIp: string;

  before(async () => {
    desc = await labUp(lab);
    node = desc.nodes[0]!;
    sentinel = await newPod(lab, 'sentinel');
    sentinelIp = (await addPod(node, sentinel)).ip;
  });

  after(async () => {
    await labDown(lab);
    rmSync(spoolDir, { recursive: true, force: true });
  });

  test(`${RUNS} malformed requests are each refused with a fitting CNI error and change nothing`, async (t) => {
    const target: FuzzTarget = {
      agentSocket: node.agentSocket,
      delSpoolDir: spoolDir,
      sentinel: { containerId: sentinel.containerId, ifName: 'eth0', netns: sentinel.netnsPath },
      absentNetns: `/var/run/netns/${lab}-absent`,
    };
    const baseline = await steadySnapshot(node);
    const codes = new Map<number, number>();
    let cases = 0;
    t.diagnostic(`fast-check seed ${SEED}`);
    const started = performance.now();
    await fc.assert(
      fc.asyncProperty(hostileRequests(target), async (req) => {
        cases++;
        const label = describeCase(req);
        const out = await execInNode(node, req);
        assert.notEqual(out.code, 0, `${label}\nwas accepted: ${out.stdout}`);
        assert.equal(out.stderr, '', `${label}\nthe plugin wrote to stderr`);
        let error: { cniVersion?: unknown; code?: unknown; msg?: unknown; details?: unknown };
        try {
          error = JSON.parse(out.stdout);
        } catch {
          assert.fail(`${label}\nstdout is not a CNI error object: ${JSON.stringify(out.stdout)}`);
        }
        const fitting = [...new Set(req.defects.map((d) => d.code))];
        assert.ok(
          fitting.includes(error.code as number),
          `${label}\ncode ${error.code} fits none of ${fitting}: ${out.stdout}`,
        );
        assert.equal(error.cniVersion, req.errorVersion, `${label}\ncniVersion of the error`);
        assert.ok(typeof error.msg === 'string' && error.msg !== '', `${label}\nmsg`);
        assert.ok(error.details === undefined || typeof error.details === 'string', `${label}\ndetails`);
        const only = req.defects.length === 1 ? req.defects[0] : undefined;
        if (only?.mentions) {
          assert.match(`${error.msg} ${error.details ?? ''}`, only.mentions, `${label}\nthe error names it`);
        }
        codes.set(error.code as number, (codes.get(error.code as number) ?? 0) + 1);
        const difference = snapshotDifference(baseline, await snapshotNode(node));
        assert.equal(difference, undefined, `${label}\nchanged the node: ${difference}`);
        assert.deepEqual(readdirSync(spoolDir), [], `${label}\nwas spooled: the agent seemed unreachable`);
      }),
      { numRuns: RUNS, seed: SEED, endOnFailure: true },
    );
    const seconds = (performance.now() - started) / 1000;
    const byCode = [...codes].sort(([a], [b]) => a - b).map(([c, n]) => `${c}: ${n}`);
    t.diagnostic(`${cases} fuzz cases in ${seconds.toFixed(1)} s; CNI error codes ${byCode.join(', ')}`);
    assert.equal(cases, RUNS);
  });

  test('the agent still serves afterwards: the sentinel passes CHECK and reaches the VPC, a new pod gets added and deleted', async () => {
    const check = await cni(node, 'CHECK', sentinel);
    assert.equal(check.exitCode, 0, check.stdout);
    assert.ok(await reaches(desc.vpcHosts[0]!.netns, sentinelIp), 'the sentinel pod still reaches the VPC');
    const fresh = await newPod(lab, 'fresh');
    const before = await snapshotNode(node);
    const { ip } = await addPod(node, fresh);
    assert.notEqual(ip, sentinelIp);
    assert.ok(await reaches(desc.vpcHosts[0]!.netns, ip), 'the new pod reaches the VPC');
    // The fuzz run's check would have seen what a request did: an ADD shows in the snapshot.
    assert.notEqual(snapshotDifference(before, await snapshotNode(node)), undefined);
    const del = await cni(node, 'DEL', fresh);
    assert.equal(del.exitCode, 0, del.stdout);
  });
});
