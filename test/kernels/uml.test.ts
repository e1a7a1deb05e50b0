// The User-Mode Linux runner gives suites a kernel with 802.1q, which this machine's lacks: VLAN
// devices carry traffic between namespaces there, node runs, and what the command prints, its exit
// status and the named environment cross the boundary. It runs Debian 12's UML where that boots and
// Debian unstable's where it cannot (hosts whose CPU has AMX); VPCNET_UML=newer forces the latter,
// so the fallback is exercised on every host. Namespaces here exist only inside UML.
import assert from 'node:assert/strict';
import { appendFileSync, chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { kernelRelease, runInUml, umlGate, umlSuiteTests } from './uml-fixture.ts';

const uml = await umlGate();

/** Parses the `key=value` lines a script inside UML prints. */
function reported(stdout: string): Map<string, string> {
  const values = new Map<string, string>();
  for (const line of stdout.split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) values.set(line.slice(0, eq), line.slice(eq + 1));
  }
  return values;
}

// Two namespace pairs, each joined by a veth with a VLAN device on either end. Pair A uses VLAN 7
// on both ends; pair B puts the same subnet on VLAN 7 and VLAN 8, so its ping can only fail if the
// 802.1q tag really is on the wire and honoured.
const vlanScript = `
set -eu
link() { # ns-left ns-right vid-left vid-right ip-left ip-right
  ip netns add "$1"; ip netns add "$2"
  ip -n "$1" link add trunk type veth peer name trunk netns "$2"
  for ns in "$1" "$2"; do ip -n "$ns" link set lo up; ip -n "$ns" link set trunk up; done
  ip -n "$1" link add link trunk name "trunk.$3" type vlan id "$3"
  ip -n "$2" link add link trunk name "trunk.$4" type vlan id "$4"
  ip -n "$1" addr add "$5/24" dev "trunk.$3"; ip -n "$1" link set "trunk.$3" up
  ip -n "$2" addr add "$6/24" dev "trunk.$4"; ip -n "$2" link set "trunk.$4" up
}
link umlt-a1 umlt-a2 7 7 192.168.7.1 192.168.7.2
link umlt-b1 umlt-b2 7 8 192.168.7.1 192.168.7.2
echo "vlan=$(ip -n umlt-a1 -d -j link show trunk.7)"
set +e
ip netns exec umlt-a1 ping -c 3 -i 0.2 -W 2 192.168.7.2 >/dev/null; echo "same_vid_ping=$?"
ip netns exec umlt-b1 ping -c 2 -i 0.2 -W 1 192.168.7.2 >/dev/null; echo "other_vid_ping=$?"
echo "rx=$(ip -n umlt-a2 -j -s link show trunk.7)"
`;

describe('User-Mode Linux runner (scripts/run-in-uml.sh)', { skip: uml.skip }, () => {
  before(() => uml.assertReady());

  test('node runs under the chosen UML kernel with only the named environment; exit status and stderr come back', async (t) => {
    t.diagnostic(`kernel: ${uml.kernel ?? 'not reported'}`);
    const probe =
      'const os = require("node:os"); console.log(JSON.stringify({ version: process.version, ' +
      'release: os.release(), env: process.env })); console.error("to stderr"); process.exit(7)';
    const r = await runInUml(['node', '-e', probe], {
      env: { VPCNET_TEST_TRUNK_DRIVER: 'vlan', VPCNET_UML_PROBE: 'two words; $not expanded' },
    });
    assert.equal(r.code, 7, `stderr: ${r.stderr}`);
    assert.match(r.stderr, /to stderr/);
    const seen = JSON.parse(r.stdout) as { version: string; release: string; env: Record<string, string> };
    assert.equal(seen.version, process.version);
    assert.equal(seen.release, kernelRelease(r.kernel), `the runner said: ${r.kernel}`);
    assert.equal(seen.env.VPCNET_TEST_TRUNK_DRIVER, 'vlan');
    assert.equal(seen.env.VPCNET_UML_PROBE, 'two words; $not expanded');
    assert.equal(seen.env.mem, undefined, "the kernel's boot parameters must not leak into the environment");
  });

  test('namespaces joined by a veth ping each other across 802.1q VLAN 7 devices; a VLAN id mismatch does not', async () => {
    const r = await runInUml(['bash', '-c', vlanScript]);
    assert.equal(r.code, 0, `stderr: ${r.stderr}`);
    const values = reported(r.stdout);
    const vlan = JSON.parse(values.get('vlan') ?? '[]') as Array<{
      linkinfo?: { info_kind?: string; info_data?: { protocol?: string; id?: number } };
    }>;
    assert.equal(vlan[0]?.linkinfo?.info_kind, 'vlan');
    assert.equal(vlan[0]?.linkinfo?.info_data?.protocol, '802.1Q');
    assert.equal(vlan[0]?.linkinfo?.info_data?.id, 7);
    assert.equal(values.get('same_vid_ping'), '0', `ping across VLAN 7 failed; stdout: ${r.stdout}`);
    assert.notEqual(values.get('other_vid_ping'), '0', 'ping between VLAN 7 and VLAN 8 got through');
    const rx = JSON.parse(values.get('rx') ?? '[]') as Array<{ stats64?: { rx?: { packets?: number } } }>;
    assert.ok((rx[0]?.stats64?.rx?.packets ?? 0) >= 3, 'the VLAN 7 device on the far end received the pings');
  });

  test('a kernel that stops before the command finished is reported with exit status 125', async () => {
    const r = await runInUml(['sh', '-c', 'echo started; echo o > /proc/sysrq-trigger; sleep 30']);
    assert.equal(r.code, 125);
    assert.match(r.stdout, /started/);
    assert.match(r.stderr, /UML kernel stopped before the command finished/);
  });
});

// A stand-in for a UML that cannot boot on this host, as Debian 12's does on AMX CPUs: it prints
// what that kernel prints and dies. Each start is counted in `starts`.
function failingUml(dir: string, name: string): { binary: string; starts: string } {
  const binary = join(dir, name);
  const starts = join(dir, `${name}.starts`);
  writeFileSync(
    binary,
    `#!/bin/sh
echo started >>${JSON.stringify(starts)}
echo "Linux version 6.1.176 (a stand-in)"
echo "userspace - ptrace set fp regs failed, errno = 14"
echo "Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000009"
exit 1
`,
  );
  chmodSync(binary, 0o755);
  appendFileSync(starts, '');
  return { binary, starts };
}

describe('the newer UML, for hosts where the system one cannot boot', { skip: uml.skip }, () => {
  let dir = '';
  before(() => {
    uml.assertReady();
    dir = mkdtempSync(join(tmpdir(), 'vpcnet-uml-test-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("VPCNET_UML=newer runs Debian unstable's UML, and 802.1q traffic flows there", async (t) => {
    const r = await runInUml(['bash', '-c', `uname -r; ${vlanScript}`], {
      runnerEnv: { VPCNET_UML: 'newer' },
    });
    t.diagnostic(`kernel: ${r.kernel ?? 'not reported'}`);
    assert.equal(r.code, 0, `stderr: ${r.stderr}`);
    assert.match(r.kernel ?? '', /: VPCNET_UML=newer$/);
    assert.doesNotMatch(r.kernel ?? '', /\(\/usr\/bin\/linux\.uml\)/, 'the system UML ran');
    assert.equal(r.stdout.split('\n')[0], kernelRelease(r.kernel));
    const values = reported(r.stdout);
    assert.equal(values.get('same_vid_ping'), '0', `ping across VLAN 7 failed; stdout: ${r.stdout}`);
    assert.notEqual(values.get('other_vid_ping'), '0', 'ping between VLAN 7 and VLAN 8 got through');
  });

  test('a system UML that cannot boot is probed once per machine, and the newer one runs in its place', async () => {
    const system = failingUml(dir, 'system-uml');
    const runnerEnv = { VPCNET_UML_SYSTEM_BINARY: system.binary, VPCNET_UML_PROBES: join(dir, 'probes') };
    for (let run = 1; run <= 2; run++) {
      const r = await runInUml(['uname', '-r'], { runnerEnv });
      assert.equal(r.code, 0, `run ${run}: ${r.stderr}`);
      assert.match(
        r.kernel ?? '',
        /the system's UML \(.*system-uml\) cannot boot on this host \(userspace - ptrace set fp regs failed, errno = 14\); using the newer one$/,
      );
      assert.equal(r.stdout.trim(), kernelRelease(r.kernel));
    }
    assert.equal(
      readFileSync(system.starts, 'utf8'),
      'started\n',
      'the failing kernel was probed more than once',
    );
  });

  test("when no UML boots, the runner exits 125 with both consoles' last lines", async () => {
    const system = failingUml(dir, 'no-system-uml');
    const newer = failingUml(dir, 'no-newer-uml');
    const r = await runInUml(['uname', '-r'], {
      runnerEnv: {
        VPCNET_UML_SYSTEM_BINARY: system.binary,
        VPCNET_UML_NEWER_BINARY: newer.binary,
        VPCNET_UML_PROBES: join(dir, 'probes'),
      },
    });
    assert.equal(r.code, 125);
    assert.match(r.stderr, /no User-Mode Linux kernel boots on this host/);
    assert.equal(
      r.stderr.match(/\| userspace - ptrace set fp regs failed, errno = 14/g)?.length,
      2,
      r.stderr,
    );
    assert.equal(r.kernel, undefined);
  });
});

// Each suite boots its own UML (one CPU each), so the two run side by side on the host's two cores.
describe('suites that need 802.1q, run under User-Mode Linux', { skip: uml.skip, concurrency: true }, () => {
  before(() => uml.assertReady());
  umlSuiteTests(test);
});
