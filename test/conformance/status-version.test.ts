// CNI STATUS (1.1.0: success in silence when the plugin can serve ADDs, code 50 when it cannot;
// below 1.1.0 refused with code 1, as libcni's skel does) and VERSION (every spec version: the
// answer names the version asked for and the versions the plugin speaks, even without an agent).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { labDown, uniqueLabName } from '../lab-fixture.ts';
import { ConformanceRuntime } from './runtime.ts';
import { SPEC_VERSIONS, UNSPOKEN_VERSIONS, versionsBefore } from './spec-versions.ts';
import { expectError, expectNamed, expectQuietSuccess, expectVersionAnswer } from './wire-shapes.ts';

/** A socket path nothing listens on (its directory does not exist either). */
const ABSENT_AGENT = `/run/vpccf-absent-${randomBytes(4).toString('hex')}/agent.sock`;

describe('conformance: STATUS and VERSION', () => {
  const name = uniqueLabName('vpccfs');
  let rt: ConformanceRuntime;

  before(async () => {
    rt = await ConformanceRuntime.start(name, 'm5.2xlarge');
  });
  after(async () => {
    await labDown(name);
  });

  test('STATUS 1.1.0 with only CNI_COMMAND and CNI_PATH succeeds and prints nothing while the agent serves', async () => {
    expectQuietSuccess(await rt.runNetworkCommand('STATUS', '1.1.0'));
  });

  test('STATUS 1.1.0 fails with code 50 naming the agent socket when the agent cannot be reached', async () => {
    const run = await rt.runNetworkCommand('STATUS', '1.1.0', { agentSocket: ABSENT_AGENT });
    expectNamed(expectError(run, 50, '1.1.0'), ABSENT_AGENT);
  });

  test('an ADD after a failed STATUS still works (STATUS is informational)', async (t) => {
    expectError(await rt.runNetworkCommand('STATUS', '1.1.0', { agentSocket: ABSENT_AGENT }), 50, '1.1.0');
    const pod = await rt.newPod();
    const { ip } = await rt.attach(t, { pod, version: '1.1.0' });
    assert.match(ip, /^10\.0\./);
  });

  for (const v of versionsBefore('1.1.0')) {
    test(`STATUS ${v} is refused with code 1 naming the version`, async () => {
      const err = expectError(await rt.runNetworkCommand('STATUS', v), 1, v);
      expectNamed(err, v);
      expectNamed(err, 'STATUS');
    });
  }

  for (const v of SPEC_VERSIONS) {
    test(`VERSION with stdin cniVersion ${v} answers ${v} and lists exactly the versions vpcnet speaks`, async () => {
      const answer = expectVersionAnswer(
        await rt.exec({ CNI_COMMAND: 'VERSION' }, JSON.stringify({ cniVersion: v })),
      );
      assert.equal(answer.cniVersion, v);
      assert.deepEqual(answer.supportedVersions, [...SPEC_VERSIONS]);
    });
  }

  test('VERSION with no stdin at all answers in a version it speaks', async () => {
    const answer = expectVersionAnswer(await rt.exec({ CNI_COMMAND: 'VERSION' }, ''));
    assert.ok(
      SPEC_VERSIONS.some((v) => v === answer.cniVersion),
      `answered in ${answer.cniVersion}`,
    );
    assert.deepEqual(answer.supportedVersions, [...SPEC_VERSIONS]);
  });

  for (const v of UNSPOKEN_VERSIONS) {
    test(`VERSION asked in ${v}, which vpcnet does not speak, still answers with its list so the runtime can choose`, async () => {
      const answer = expectVersionAnswer(
        await rt.exec({ CNI_COMMAND: 'VERSION' }, JSON.stringify({ cniVersion: v })),
      );
      assert.ok(
        SPEC_VERSIONS.some((s) => s === answer.cniVersion),
        `answered in ${answer.cniVersion}`,
      );
      assert.ok(!answer.supportedVersions.includes(v), `claims to speak ${v}`);
    });
  }

  test('VERSION answers while the agent cannot be reached (the plugin answers it itself)', async () => {
    const conf = rt.pluginConfig('1.1.0', { agentSocket: ABSENT_AGENT });
    const answer = expectVersionAnswer(await rt.exec({ CNI_COMMAND: 'VERSION' }, JSON.stringify(conf)));
    assert.equal(answer.cniVersion, '1.1.0');
  });
});
