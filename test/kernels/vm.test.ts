// The VM runner (scripts/run-in-vm.sh) gives suites Debian 12's stock kernel, with 802.1q (which this
// machine's kernel lacks) and nf_tables (which User-Mode Linux lacks) in one kernel: node runs there,
// a namespace holds a VLAN device and a nat chain at once, what the command prints, its exit status
// and the named environment cross the boundary, and QEMU never outlives the runner. Then every suite
// in test/kernels/vm/ runs inside. Namespaces made here exist only inside the VM. Slow (software
// emulation): CI runs it, a plain `npm test` does not.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { before, describe, test } from 'node:test';
import { until } from '../../src/dataplane/testing/scenario-helpers.ts';
import { runProcess } from '../../src/infra/process.ts';
import { GUEST_SUITE_ENV, guestSuiteTests } from './guest-suites.ts';
import { describeVmKernel, runInVm, vmGate, vmRunnerPath } from './vm-fixture.ts';

const vm = await vmGate();

/** The value of the `key=…` line a script inside printed. */
function printed(stdout: string, key: string): string {
  return new RegExp(`^${key}=(.*)$`, 'm').exec(stdout)?.[1] ?? '';
}

// One namespace with both of what the host and UML each lack: an 802.1q device on a veth and an
// nf_tables nat chain that SNATs, as vpcnet's node has. Also the guest's own mounts and log.
const stockKernelScript = `
set -eu
echo "netns_before=$(ls -A /run/netns | wc -l)"
echo "proc=$(stat -f -c %T /proc)"
echo "kmsg_bytes=$(dd if=/dev/kmsg bs=8192 count=1 iflag=nonblock 2>/dev/null | wc -c)"
echo "lo=$(ip -j link show lo)"
ip netns add vm9-both
trap 'ip netns del vm9-both' EXIT
ip -n vm9-both link add p0 type veth peer name p1
ip -n vm9-both link add link p0 name p0.7 type vlan id 7
echo "vlan=$(ip -n vm9-both -j -d link show p0.7)"
ip netns exec vm9-both nft -f - <<'NFT'
table ip vm9 {
  chain post { type nat hook postrouting priority srcnat; ip saddr 10.0.0.5 snat to 10.200.0.1; }
}
NFT
echo "nft=$(ip netns exec vm9-both nft -j list chain ip vm9 post)"
`;

/** The PIDs below `pid` whose command name starts with `comm`, from /proc/<pid>/stat. */
function descendantsNamed(pid: number, comm: string): number[] {
  const parentOf = new Map<number, number>();
  const nameOf = new Map<number, string>();
  for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    // "pid (comm) state ppid …": comm may hold blanks and parentheses, so split at the last ')'.
    const close = stat.lastIndexOf(')');
    nameOf.set(Number(entry), stat.slice(stat.indexOf('(') + 1, close));
    parentOf.set(Number(entry), Number(stat.slice(close + 2).split(' ')[1]));
  }
  const below = (p: number): boolean => {
    const parent = parentOf.get(p);
    return parent === pid || (parent !== undefined && parent > 1 && below(parent));
  };
  return [...nameOf].filter(([p, name]) => name.startsWith(comm) && below(p)).map(([p]) => p);
}

function isGone(pid: number): boolean {
  try {
    return /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

describe("VM runner (scripts/run-in-vm.sh): Debian 12's stock kernel under QEMU", { skip: vm.skip }, () => {
  before(() => vm.assertReady());

  test("node runs in the VM with only the named environment and the caller's directory; exit status, stderr and the kernel come back", async (t) => {
    const probe =
      'const os = require("node:os"); console.log(JSON.stringify({ version: process.version, ' +
      'release: os.release(), env: process.env, cwd: process.cwd() })); console.error("to stderr"); process.exit(7)';
    const r = await runInVm(['node', '-e', probe], { env: { VPCNET_VM_PROBE: 'two words; $not expanded' } });
    t.diagnostic(`kernel: ${describeVmKernel(r.kernel)}`);
    assert.equal(r.code, 7, `stderr: ${r.stderr}`);
    assert.match(r.stderr, /to stderr/);
    const seen = JSON.parse(r.stdout) as {
      version: string;
      release: string;
      env: Record<string, string>;
      cwd: string;
    };
    assert.equal(seen.version, process.version);
    assert.equal(seen.release, r.kernel?.release, `the runner said: ${r.stderr}`);
    assert.match(seen.release, /^6\.1\.0-\d+-amd64$/, "Debian 12's stock kernel");
    assert.equal(r.kernel?.accel, 'tcg');
    assert.deepEqual(Object.keys(seen.env).sort(), ['HOME', 'PATH', 'VPCNET_VM_PROBE']);
    assert.equal(seen.env.VPCNET_VM_PROBE, 'two words; $not expanded');
    assert.equal(seen.cwd, process.cwd());
  });

  test('one namespace in the VM holds an 802.1q device and an nf_tables SNAT chain; /run/netns starts empty; the log is readable', async () => {
    const r = await runInVm(['bash', '-c', stockKernelScript]);
    assert.equal(r.code, 0, `stderr: ${r.stderr}`);
    assert.equal(printed(r.stdout, 'netns_before'), '0');
    assert.equal(printed(r.stdout, 'proc'), 'proc', "the guest's own /proc");
    assert.ok(Number(printed(r.stdout, 'kmsg_bytes')) > 0, 'the kernel-log guard can read /dev/kmsg');
    const lo = JSON.parse(printed(r.stdout, 'lo') || '[]') as Array<{ flags?: string[] }>;
    assert.ok(lo[0]?.flags?.includes('UP'), 'loopback is up');
    const vlan = JSON.parse(printed(r.stdout, 'vlan') || '[]') as Array<{
      linkinfo?: { info_kind?: string; info_data?: { protocol?: string; id?: number } };
    }>;
    assert.equal(vlan[0]?.linkinfo?.info_kind, 'vlan');
    assert.equal(vlan[0]?.linkinfo?.info_data?.protocol, '802.1Q');
    assert.equal(vlan[0]?.linkinfo?.info_data?.id, 7);
    const nft = JSON.parse(printed(r.stdout, 'nft') || '{}') as { nftables?: Array<Record<string, unknown>> };
    const rule = nft.nftables?.find((o) => 'rule' in o)?.rule as { expr?: unknown[] } | undefined;
    assert.ok(
      rule?.expr?.some((e) => JSON.stringify(e) === JSON.stringify({ snat: { addr: '10.200.0.1' } })),
      JSON.stringify(nft),
    );
  });

  test('a usage error exits 2 with the usage line; a VM that stops without the status or overruns its time exits 125', async () => {
    const usage = await runProcess(['bash', vmRunnerPath, '--cpus', 'two', 'true']);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /^usage: .*run-in-vm\.sh \[--cpus N\]/);
    const stopped = await runInVm(['sh', '-c', 'echo started; echo o > /proc/sysrq-trigger; sleep 60']);
    assert.equal(stopped.code, 125);
    assert.match(stopped.stdout, /started/);
    assert.match(stopped.stderr, /the VM stopped without the command's status/);
    const overrun = await runInVm(['sleep', '600'], { timeoutMs: 15_000 });
    assert.equal(overrun.code, 125);
    assert.match(overrun.stderr, /did not finish within 15 s: sleep 600/);
  });

  test('QEMU stops when the runner is killed, even with SIGKILL', async () => {
    const runner = spawn('bash', [vmRunnerPath, '--timeout', '300', '--', 'sleep', '600'], {
      stdio: 'ignore',
    });
    let qemu: number | undefined;
    let scratch = '';
    try {
      await until(async () => {
        await new Promise((r) => setTimeout(r, 250)); // a scan of /proc, not every 10 ms
        qemu = descendantsNamed(runner.pid ?? -1, 'qemu-system').at(0);
        return qemu !== undefined;
      }, 60_000);
      const pid = qemu ?? -1;
      // A runner killed with SIGKILL cannot remove its scratch directory: this test does.
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      scratch = /vpcnet_vm\.init=(\S*\/run-in-vm\.[A-Za-z0-9]+)\/init/.exec(cmdline)?.[1] ?? '';
      runner.kill('SIGKILL');
      await until(async () => isGone(pid), 30_000);
    } finally {
      runner.kill('SIGKILL');
      // Should the runner's QEMU have outlived it (the failure this test looks for), it goes now.
      if (qemu !== undefined && !isGone(qemu)) process.kill(qemu, 'SIGKILL');
      if (scratch !== '') rmSync(scratch, { recursive: true, force: true });
    }
    assert.notEqual(scratch, '', 'the scratch directory was found on the kernel command line');
  });
});

describe("suites that need 802.1q and nf_tables, run on Debian 12's stock kernel in the VM", {
  skip: vm.skip,
}, () => {
  before(() => vm.assertReady());
  guestSuiteTests(test, 'vm', 'on the stock kernel', async (argv) => {
    const r = await runInVm(argv, { env: GUEST_SUITE_ENV, cpus: 2, memory: '3G', timeoutMs: 420_000 });
    return { ...r, kernel: describeVmKernel(r.kernel) };
  });
});
