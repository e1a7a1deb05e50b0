// The spec's well-known error codes, provoked from outside at every version they apply to: each
// failure is a non-zero exit with exactly one error object on stdout (cniVersion, code, msg,
// details) whose text names the variable, key or value at fault, and a refused request changes
// neither the ledger nor the node's links. Codes 50 (STATUS) is in status-version.test.ts. Not
// provokable: 2 (vpcnet ignores keys it does not know, which the spec allows: "Plugins may define
// additional fields that they accept and may generate an error if called with unknown fields") and
// 51 (vpcnet has no state in which existing pods lose connectivity while STATUS can be answered).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { hostLinks, labDown, type TestPod, uniqueLabName } from '../lab-fixture.ts';
import { type CniEnv, ConformanceRuntime } from './runtime.ts';
import { compareVersions, SPEC_VERSIONS, UNSPOKEN_VERSIONS, versionsFrom } from './spec-versions.ts';
import {
  type ErrorObject,
  expectError,
  expectNamed,
  expectQuietSuccess,
  type PluginRun,
} from './wire-shapes.ts';

type AttachCommand = 'ADD' | 'DEL' | 'CHECK';

/** A broken environment and the variable the error must name (spec code 4). */
interface EnvFault {
  readonly what: string;
  readonly commands: readonly AttachCommand[];
  readonly env: CniEnv;
  readonly names: string;
}

const ENV_FAULTS: readonly EnvFault[] = [
  { what: 'CNI_COMMAND unset', commands: ['ADD'], env: { CNI_COMMAND: undefined }, names: 'CNI_COMMAND' },
  { what: 'CNI_COMMAND unknown', commands: ['ADD'], env: { CNI_COMMAND: 'ATTACH' }, names: 'CNI_COMMAND' },
  ...(['ADD', 'DEL', 'CHECK'] as const).flatMap((c): EnvFault[] => [
    {
      what: 'CNI_CONTAINERID unset',
      commands: [c],
      env: { CNI_CONTAINERID: undefined },
      names: 'CNI_CONTAINERID',
    },
    {
      what: 'CNI_CONTAINERID "-x/y"',
      commands: [c],
      env: { CNI_CONTAINERID: '-x/y' },
      names: 'CNI_CONTAINERID',
    },
    { what: 'CNI_IFNAME unset', commands: [c], env: { CNI_IFNAME: undefined }, names: 'CNI_IFNAME' },
    {
      what: 'CNI_IFNAME of 16 characters',
      commands: [c],
      env: { CNI_IFNAME: 'eth0123456789abc' },
      names: 'CNI_IFNAME',
    },
    { what: 'CNI_IFNAME "eth/0"', commands: [c], env: { CNI_IFNAME: 'eth/0' }, names: 'CNI_IFNAME' },
    { what: 'CNI_IFNAME ".."', commands: [c], env: { CNI_IFNAME: '..' }, names: 'CNI_IFNAME' },
  ]),
  { what: 'CNI_NETNS unset', commands: ['ADD', 'CHECK'], env: { CNI_NETNS: undefined }, names: 'CNI_NETNS' },
  { what: 'CNI_NETNS empty', commands: ['ADD', 'CHECK'], env: { CNI_NETNS: '' }, names: 'CNI_NETNS' },
  {
    what: 'CNI_ARGS "K8S_POD_NAME"',
    commands: ['ADD'],
    env: { CNI_ARGS: 'K8S_POD_NAME' },
    names: 'CNI_ARGS',
  },
];

/** A broken configuration and what the error must name (spec code 7). */
const CONFIG_FAULTS: readonly { what: string; config: Record<string, unknown>; names: readonly string[] }[] =
  [
    { what: 'name "bad name!"', config: { name: 'bad name!' }, names: ['bad name!'] },
    { what: 'no name', config: { name: undefined }, names: ['name'] },
    { what: 'no type', config: { type: undefined }, names: ['type'] },
    { what: 'mtu 10', config: { mtu: 10 }, names: ['mtu', '10'] },
    { what: 'mtu "9001" (a string)', config: { mtu: '9001' }, names: ['mtu'] },
    { what: 'vethPrefix "eth" (reserved)', config: { vethPrefix: 'eth' }, names: ['vethPrefix', 'eth'] },
    {
      what: 'podSGEnforcingMode "lax"',
      config: { podSGEnforcingMode: 'lax' },
      names: ['podSGEnforcingMode', 'lax'],
    },
    { what: 'runtimeConfig "x"', config: { runtimeConfig: 'x' }, names: ['runtimeConfig'] },
  ];

const PREV_RESULT_FAULTS: readonly { what: string; prevResult: unknown; names: string }[] = [
  { what: 'prevResult.ips not a list', prevResult: { ips: 'x' }, names: 'prevResult.ips' },
  {
    what: 'prevResult IP naming interface 5 of 1',
    prevResult: { interfaces: [{ name: 'eth0' }], ips: [{ address: '10.0.0.9/32', interface: 5 }] },
    names: 'interface',
  },
];

function supports(command: AttachCommand, v: string): boolean {
  return command !== 'CHECK' || compareVersions(v, '0.4.0') >= 0;
}

describe('conformance: error codes', () => {
  const name = uniqueLabName('vpccfe');
  const absentAgent = `/run/vpccf-absent-${randomBytes(4).toString('hex')}/agent.sock`;
  let rt: ConformanceRuntime;
  let pod: TestPod;
  let scratch: string;

  before(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'vpccf-'));
    rt = await ConformanceRuntime.start(name, 'm5.2xlarge');
    pod = await rt.newPod();
  });
  after(async () => {
    await labDown(name);
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  /** Runs a request that must be refused with `code`, and checks it changed nothing. */
  async function refused(code: number, version: string | undefined, send: () => Promise<PluginRun>) {
    const ledgerBefore = (await rt.state()).attachments.map((a) => a.keyString).sort();
    const linksBefore = (await hostLinks(rt.node)).sort();
    const err: ErrorObject = expectError(await send(), code, version);
    assert.deepEqual(
      (await rt.state()).attachments.map((a) => a.keyString).sort(),
      ledgerBefore,
      'ledger changed',
    );
    assert.deepEqual((await hostLinks(rt.node)).sort(), linksBefore, "the node's links changed");
    return err;
  }

  for (const v of UNSPOKEN_VERSIONS) {
    for (const command of ['ADD', 'DEL', 'CHECK'] as const) {
      test(`code 1: ${command} at cniVersion ${v}, which vpcnet does not speak, names ${v}`, async () => {
        expectNamed(await refused(1, v, () => rt.run(command, { pod, version: v })), v);
      });
    }
  }

  test('code 1: ADD with no cniVersion names cniVersion', async () => {
    const conf = rt.pluginConfig('1.0.0', { cniVersion: undefined });
    const env = rt.attachmentEnv('ADD', { pod, version: '1.0.0' });
    expectNamed(await refused(1, undefined, () => rt.exec(env, JSON.stringify(conf))), 'cniVersion');
  });

  for (const v of SPEC_VERSIONS) {
    test(`code 3: ADD ${v} into a CNI_NETNS that does not exist names the path`, async () => {
      const netns = `/var/run/netns/${rt.lab.name}-absent`;
      expectNamed(await refused(3, v, () => rt.run('ADD', { pod, version: v, netns })), netns);
    });

    for (const fault of ENV_FAULTS) {
      for (const command of fault.commands.filter((c) => supports(c, v))) {
        test(`code 4: ${command} ${v} with ${fault.what} names ${fault.names}`, async () => {
          const env = { ...rt.attachmentEnv(command, { pod, version: v }), ...fault.env };
          const conf = JSON.stringify(rt.pluginConfig(v));
          const err = await refused(4, v, () => rt.exec(env, conf));
          // Spec, code 4: "The error message must contain the names of invalid variables."
          assert.ok(err.msg.includes(fault.names), `msg does not name ${fault.names}: ${err.msg}`);
        });
      }
    }

    test(`code 5: DEL ${v} while the agent is unreachable and its spool directory unusable names the directory`, async () => {
      const file = join(scratch, `not-a-dir-${v}`);
      await writeFile(file, '');
      const delSpoolDir = join(file, 'spool');
      const config = { agentSocket: absentAgent, delSpoolDir };
      expectNamed(await refused(5, v, () => rt.run('DEL', { pod, version: v, config })), delSpoolDir);
    });

    test(`DEL ${v} while the agent is unreachable succeeds, spooled for the agent`, async () => {
      const delSpoolDir = join(scratch, `spool-${v}`);
      expectQuietSuccess(
        await rt.run('DEL', { pod, version: v, config: { agentSocket: absentAgent, delSpoolDir } }),
      );
      assert.equal((await readdir(delSpoolDir)).filter((f) => f.endsWith('.del.json')).length, 1);
    });

    for (const fault of CONFIG_FAULTS) {
      test(`code 7: ADD ${v} with ${fault.what} names ${fault.names.join(' and ')}`, async () => {
        const err = await refused(7, v, () => rt.run('ADD', { pod, version: v, config: fault.config }));
        for (const needle of fault.names) expectNamed(err, needle);
      });
    }

    test(`code 11: ADD ${v} while the agent is unreachable names the socket and says to try again`, async () => {
      const err = await refused(11, v, () =>
        rt.run('ADD', { pod, version: v, config: { agentSocket: absentAgent } }),
      );
      expectNamed(err, absentAgent);
    });
  }

  for (const v of versionsFrom('0.4.0')) {
    test(`code 3: CHECK ${v} of a container vpcnet never added names the container`, async () => {
      const stranger = await rt.newPod();
      expectNamed(
        await refused(3, v, () => rt.run('CHECK', { pod: stranger, version: v })),
        stranger.containerId,
      );
    });

    for (const command of ['DEL', 'CHECK'] as const) {
      for (const fault of PREV_RESULT_FAULTS) {
        test(`code 7: ${command} ${v} with ${fault.what} names ${fault.names}`, async () => {
          const err = await refused(7, v, () =>
            rt.run(command, { pod, version: v, prevResult: fault.prevResult }),
          );
          expectNamed(err, fault.names);
        });
      }
    }

    test(`code 11: CHECK ${v} while the agent is unreachable names the socket`, async () => {
      const config = { agentSocket: absentAgent };
      expectNamed(await refused(11, v, () => rt.run('CHECK', { pod, version: v, config })), absentAgent);
    });
  }

  for (const [what, stdin] of [
    ['stdin that is not JSON', '{"cniVersion": "1.0.0",'],
    ['stdin that is a JSON list', '["cniVersion", "1.0.0"]'],
    ['empty stdin', ''],
  ] as const) {
    for (const command of ['ADD', 'DEL'] as const) {
      test(`code 6: ${command} with ${what} fails, its error in a version vpcnet speaks`, async () => {
        const env = rt.attachmentEnv(command, { pod, version: '1.0.0' });
        const err = await refused(6, undefined, () => rt.exec(env, stdin));
        assert.ok(
          SPEC_VERSIONS.some((s) => s === err.cniVersion),
          `error in version ${err.cniVersion}`,
        );
      });
    }
  }
});
