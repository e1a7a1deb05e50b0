// What the native forwarder buys, printed as diagnostics: process start (VERSION) and a forwarded
// CHECK, p50 of 30 runs each, against the TypeScript one (and the reference bridge plugin when
// installed). A measurement, not a bound: timings on a shared machine are noisy.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { attachEnv, builtPlugins, netconf, type Plugin } from './testing/built-plugins.ts';
import { answerWith, startFakeAgent } from './testing/fake-agent.ts';

const { nativeBin, jsBin, exec, execFileWithStdin } = builtPlugins();

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
}

test('timing: process start (VERSION) and a forwarded CHECK, p50 of 30', async (t) => {
  const runs = 30;
  const versionP50 = async (argv: string[]): Promise<number> => {
    const xs: number[] = [];
    for (let i = 0; i < runs; i++) {
      const out = await execFileWithStdin(argv, { CNI_COMMAND: 'VERSION' }, '{"cniVersion":"1.0.0"}');
      assert.equal(out.code, 0, argv[0]);
      xs.push(out.ms);
    }
    return median(xs);
  };
  const bridge = '/usr/lib/cni/bridge';
  const lines = [
    `VERSION p50 (ms): native ${(await versionP50([nativeBin])).toFixed(2)}, js ${(await versionP50([process.execPath, jsBin])).toFixed(2)}` +
      (existsSync(bridge) ? `, reference ${bridge} ${(await versionP50([bridge])).toFixed(2)}` : ''),
  ];
  const agent = await startFakeAgent(answerWith(0, '{"cniVersion":"1.0.0"}'));
  try {
    const stdin = netconf({ agentSocket: agent.socketPath });
    const checkP50 = async (plugin: Plugin): Promise<number> => {
      const xs: number[] = [];
      for (let i = 0; i < runs; i++)
        xs.push((await exec(plugin, { ...attachEnv, CNI_COMMAND: 'CHECK' }, stdin)).ms);
      return median(xs);
    };
    lines.push(
      `forwarded CHECK p50 (ms): native ${(await checkP50('native')).toFixed(2)}, js ${(await checkP50('js')).toFixed(2)}`,
    );
    assert.equal(agent.requests.length, 2 * runs);
  } finally {
    await agent.close();
  }
  for (const line of lines) t.diagnostic(line);
});
