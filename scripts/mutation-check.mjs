// A small mutation check for the five rules of docs/design.md: each mutation breaks one rule in a
// copy of src/ (one production line or expression changed), then the unit tests of the areas that
// should notice run against the copy. A mutation the tests do not notice ("survived") means a rule
// can break silently: the check fails. So does a mutation whose target text is no longer in the
// source (the code moved: update the mutation, do not drop it).
//
// Usage: node scripts/mutation-check.mjs [--list] [NAME...]
import { spawn } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { basename, dirname, join, relative, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');

/**
 * name: short id; rule: which of the five it breaks; file: relative to the repo; from → to: an
 * exact text that must occur once in the file; tests: folders (their *.test.ts) or test files, one
 * of which must fail. A mutation with `compiler` instead of `tests` is one the types forbid: the
 * type checker (tsc over the mutated copy) must refuse it with an error matching `compiler`.
 */
export const MUTATIONS = [
  {
    name: 'del-tears-down-branch',
    rule: 'ownership',
    what: 'a DEL of any sandbox of a branch-ENI pod removes the pod’s branch device, table and rules (upstream #1644)',
    file: 'src/agent/branch/del-branch.ts',
    from: 'const settled = await settleBinding(ctx, binding);',
    to: 'await dataplane.remove(b.resources); ledger.putBinding({ ...b, resources: [] }); await ledger.commit(); const settled = { tornDown: false };',
    tests: ['src/agent/branch'],
  },
  {
    name: 'holder-oldest',
    rule: 'ownership',
    what: 'when the holder leaves, the oldest remaining sandbox (not the newest) takes the branch ENI',
    file: 'src/bindings/settle.ts',
    from: '(best, m) => (best && best.createdAt > m.createdAt ? best : m)',
    to: '(best, m) => (best && best.createdAt <= m.createdAt ? best : m)',
    tests: ['src/bindings', 'src/agent/branch'],
  },
  {
    name: 'recordless-del-guard',
    rule: 'DEL does not guess',
    what: 'a DEL without a record removes the rule and SNAT element of an address a live pod holds',
    file: 'src/agent/cni-ops/del.ts',
    from: 'if (ctx.ledger.addressInUse(ip)) continue;',
    to: '',
    tests: ['src/agent'],
  },
  {
    name: 'del-ignores-record',
    rule: 'DEL does not guess',
    what: 'DEL ignores the ledger record and removes what the request alone names',
    file: 'src/agent/cni-ops/del.ts',
    from: '  if (att) {',
    to: '  if (att && false) {',
    tests: ['src/agent'],
  },
  {
    name: 'pod-line-per-sandbox',
    rule: 'one pod, one line',
    what: 'operations of one pod no longer share a line (each sandbox gets its own)',
    file: 'src/plan/pod-line.ts',
    from: 'export function podLineKey(pod: PodIdentity, key: AttachmentKey): string {',
    to: "export function podLineKey(pod: PodIdentity, key: AttachmentKey): string {\n  return 'container:' + key.containerId;",
    tests: ['src/plan', 'src/agent'],
  },
  {
    name: 'ledger-no-file-fsync',
    rule: 'durable before success',
    what: 'the ledger’s temporary file is renamed into place without fsync',
    file: 'src/ledger/storage/store.ts',
    from: 'await this.#fs.syncFile(tmp);',
    to: '',
    tests: ['src/ledger'],
  },
  {
    name: 'ledger-no-dir-fsync',
    rule: 'durable before success',
    what: 'the ledger’s directory is not fsynced after the rename',
    file: 'src/ledger/storage/store.ts',
    from: '    try {\n      await this.#fs.syncDir(nodePath.dirname(this.#path));\n    } catch (err) {',
    to: '    try {\n    } catch (err) {',
    tests: ['src/ledger'],
  },
  {
    name: 'ledger-no-journal-sync',
    rule: 'durable before success',
    what: 'a commit appends its record to the ledger journal without fdatasync',
    file: 'src/ledger/storage/journal-file.ts',
    from: 'await handle.syncData();',
    to: '',
    tests: ['src/ledger'],
  },
  {
    name: 'check-never-drift',
    rule: 'convergence',
    what: 'CHECK never reports drift',
    file: 'src/agent/cni-ops/check.ts',
    from: 'if (problems.length > 0) {',
    to: 'if (problems.length < 0) {',
    tests: ['src/agent'],
  },
  {
    name: 'reconcile-no-repair',
    rule: 'convergence',
    what: 'the reconcile loop finds drift and does not repair it',
    file: 'src/reconcile/reconciler.ts',
    from: 'await dataplane.repair(att.netns, seen.findings);',
    to: '',
    tests: ['src/reconcile'],
  },
  {
    name: 'no-cooldown',
    rule: 'convergence',
    what: 'a released address is free at once instead of cooling down',
    file: 'src/ipam/pool/pool.ts',
    from: "entry.addresses.set(ip, { kind: 'cooling', freedAt: now });",
    to: "entry.addresses.set(ip, { kind: 'free' });",
    tests: ['src/ipam', 'src/agent'],
  },
  {
    name: 'stale-socket-kept',
    rule: 'durable before success',
    what: 'the agent does not remove a stale socket left by a killed agent, so it cannot serve again',
    file: 'src/agent/cni-ops/rpc-server.ts',
    from: 'await rm(socketPath, { force: true });',
    to: '',
    tests: ['src/agent'],
  },
  {
    name: 'gc-ignores-live-netns',
    rule: 'ownership',
    what: 'the dead-pod GC collects a pod gone from the API although its network namespace still exists',
    file: 'src/agent/loops/dead-pod-gc.ts',
    from: "if ((await this.#netns(att)) !== 'gone') {",
    to: 'if (false) {',
    tests: ['src/agent/loops/dead-pod-gc.test.ts'],
  },
  {
    name: 'recovered-collected',
    rule: 'ownership',
    what: 'after a lost ledger, the reconcile collection removes the kernel objects recovery holds for live pods',
    file: 'src/reconcile/reconciler.ts',
    from: '...ledger.recovered().flatMap((r) => r.resources.map(identityOf)),',
    to: '',
    tests: ['src/reconcile', 'src/agent/agent-recovery.test.ts'],
  },
  {
    name: 'spooled-del-after-add',
    rule: 'DEL does not guess',
    what: 'an ADD does not apply the spooled DEL of its own key first, so a later drain removes the new attachment',
    file: 'src/agent/cni-ops/cni-handler.ts',
    from: 'if (deps.spool !== undefined)',
    to: 'if (deps.spool !== undefined && false)',
    tests: ['src/agent/agent-durability.test.ts', 'src/agent/spool-replay/spool-first.test.ts'],
  },
  {
    name: 'del-leaves-snat-element',
    rule: 'ownership',
    what: "DEL answers and releases the address while the pod's SNAT element stays, for the next pod given the address to find as its own",
    file: 'src/agent/cni-ops/del.ts',
    from: 'await ctx.dataplane.remove(att.resources, { netns: att.netns });',
    to: "await ctx.dataplane.remove(att.resources.filter((r) => r.kind !== 'snat'), { netns: att.netns });",
    tests: ['src/agent/agent-snat-del.test.ts'],
  },
  {
    name: 'add-records-after-kernel',
    rule: 'ownership',
    what: 'ADD builds the pod in the kernel before its record of intent is written, so an agent dying in between leaves state nothing owns',
    file: 'src/agent/cni-ops/add.ts',
    from: "ctx.ledger.put({ ...base, phase: 'adding' });\n  await ctx.ledger.stage();",
    to: '',
    tests: ['src/agent/cni-ops/add.test.ts'],
  },
  {
    name: 'pending-eni-in-memory',
    rule: 'convergence',
    what: 'an ENI being detached is not recorded durably, so a restart mid-free leaks it',
    file: 'src/ipam/enis/pending-enis.ts',
    from: "await this.#durably({ eniId, step: 'detaching', attachmentId, since: this.#clock.now() });",
    to: '',
    tests: ['src/ipam/enis/eni-restart.test.ts'],
  },
  {
    name: 'recordless-del-no-commit',
    rule: 'durable before success',
    what: 'a DEL without a record answers success while the removal an earlier attempt failed to write is not on disk',
    file: 'src/agent/cni-ops/del.ts',
    from: '  // write it must not answer success before the removal is on disk.\n  await ctx.ledger.commit();\n}',
    to: '  // write it must not answer success before the removal is on disk.\n}',
    tests: ['src/agent/cni-ops/del.test.ts'],
  },
  {
    name: 'check-passes-half-done-add',
    rule: 'convergence',
    what: 'CHECK passes an attachment whose ADD never finished (the ledger’s "adding" phase)',
    file: 'src/agent/cni-ops/check.ts',
    from: 'if (!att || att.phase !== undefined) {',
    to: 'if (!att) {',
    tests: ['src/agent/cni-ops/check.test.ts'],
  },
  {
    name: 'recovery-ignores-api-pods',
    rule: 'ownership',
    what: 'after a lost ledger, the API’s live pods are no evidence when kernel and vpcnet ENIs show nothing: a fresh start re-lends their addresses',
    file: 'src/agent/recovery/recovery.ts',
    from: 'apiHeld.length === 0 && ',
    to: '',
    tests: ['src/agent/recovery/recovery.test.ts', 'src/agent/agent-recovery.test.ts'],
  },
  {
    // C: the copy's plugin is compiled from the copy's sources by the test (testing/built-plugins.ts).
    name: 'spool-no-dir-fsync',
    rule: 'durable before success',
    what: 'the plugin reports a spooled DEL done without fsyncing the spool directory after the rename',
    file: 'src/plugin/native/spool.c',
    from: '  if (fsync(dfd) != 0) {\n    e = errno;\n    close(dfd);\n    return fs_error(why, e, "fsync", NULL, NULL);\n  }\n',
    to: '',
    tests: ['src/plugin/native-spool-durability.test.ts'],
  },
  {
    name: 'journal-first-line-torn',
    rule: 'durable before success',
    what: 'a journal unreadable from its first line (zero-filled, cut inside its first line) is dropped as torn: every record since the snapshot is forgotten',
    file: 'src/ledger/storage/journal-file.ts',
    from: '    if (first === undefined) {\n',
    to: '    if (first === undefined) return none;\n    if (first === undefined) {\n',
    tests: ['src/ledger'],
  },
  {
    name: 'journal-bad-last-line-torn',
    rule: 'durable before success',
    what: 'a whole, damaged last record of the journal (an acknowledged one) is dropped as a torn append',
    file: 'src/ledger/storage/journal-format.ts',
    from: 'if (bad.framePrefix && bad === tail[tail.length - 1]) continue;',
    to: 'if (bad === tail[tail.length - 1]) continue;',
    tests: ['src/ledger'],
  },
  {
    name: 'journal-zeros-torn-same-boot',
    rule: 'durable before success',
    what: 'zeroed journal records are dropped as torn also within the boot that wrote them, where the page cache kept them',
    file: 'src/ledger/storage/journal-format.ts',
    from: 'if (bad.zeros && otherBoot) continue;',
    to: 'if (bad.zeros) continue;',
    tests: ['src/ledger'],
  },
  {
    name: 'journal-appends-across-boots',
    rule: 'durable before success',
    what: 'a journal is appended to after a reboot, so its first line no longer names the boot of its records',
    file: 'src/ledger/storage/journal-file.ts',
    from: 'appendable: scan.tail.length === 0 && header.boot === boot,',
    to: 'appendable: scan.tail.length === 0,',
    tests: ['src/ledger'],
  },
  {
    name: 'journal-missing-accepted',
    rule: 'durable before success',
    what: 'a journal lost after its snapshot replaced one loads as the snapshot alone',
    file: 'src/ledger/storage/journal-file.ts',
    from: "if (typeof ref.replaces === 'string')",
    to: 'if (false)',
    tests: ['src/ledger'],
  },
  {
    name: 'ledger-accepts-twins',
    rule: 'ownership',
    what: 'a ledger in which two records hold one address, one host veth or one VLAN ID loads',
    file: 'src/ledger/format/invariants.ts',
    from: 'if (first !== undefined && first !== owner) {',
    to: 'if (false) {',
    tests: ['src/ledger'],
  },
  {
    name: 'compaction-drops-adding',
    rule: 'ownership',
    what: 'a compaction leaves out records in phase "adding", so after a crash a half-done ADD is forgotten',
    file: 'src/ledger/ledger.ts',
    from: '      attachments: [...this.#attachments.values()],',
    to: "      attachments: [...this.#attachments.values()].filter((a) => a.phase !== 'adding'),",
    tests: ['src/ledger'],
  },
  {
    name: 'del-frees-held-address',
    rule: 'ownership',
    what: 'a DEL frees its address although another record still holds it',
    file: 'src/agent/cni-ops/del.ts',
    from: 'if (address && ctx.ledger.addressInUse(address.ip)) {',
    to: 'if (false) {',
    tests: ['src/agent/cni-ops/del.test.ts'],
  },
  {
    name: 'claim-trusts-annotation',
    rule: 'ownership',
    what: 'a pod-eni annotation is believed without EC2: a forged one takes another pod’s VLAN and address',
    file: 'src/agent/branch/claim.ts',
    from: 'const ec2 = await d.trunkFacts.branch(trunk.eniId, eni.eniId);',
    to: "const ec2 = { ...eni, trunkEniId: trunk.eniId, subnetId: 'subnet-0' };",
    tests: ['src/agent/branch'],
  },
  {
    name: 'claim-ignores-contradiction',
    rule: 'ownership',
    what: 'an annotation whose VLAN ID, MAC or address EC2 contradicts is used all the same',
    file: 'src/agent/branch/claim.ts',
    from: '  if (wrong.length > 0) {',
    to: '  if (false) {',
    tests: ['src/agent/branch'],
  },
  {
    name: 'claim-takes-regular-address',
    rule: 'ownership',
    what: "a branch claim on a regular pod's (or the node's) address is admitted",
    file: 'src/agent/branch/claim.ts',
    from: '  if (owner !== undefined) {',
    to: '  if (false) {',
    tests: ['src/agent/branch'],
  },
  {
    name: 'claim-supersedes-live-pod',
    rule: 'ownership',
    what: 'a binding is superseded while the API still shows its pod with its branch ENI (a copied annotation wins)',
    file: 'src/agent/branch/claim.ts',
    from: '    if (claimed) {',
    to: '    if (false) {',
    tests: ['src/agent/branch'],
  },
  {
    name: 'supersede-on-cached-ec2',
    rule: 'ownership',
    what: 'a binding is superseded on a cached EC2 answer, not a read begun after the question',
    file: 'src/agent/branch/claim.ts',
    from: 'const now = await d.trunkFacts.branch(trunk.eniId, eni.eniId, { fresh: true });',
    to: 'const now = ec2;',
    tests: ['src/agent/branch'],
  },
  {
    name: 'binding-adopts-foreign-slot',
    rule: 'ownership',
    what: 'a binding records (and its teardown removes) a route or rule slot another record owns',
    file: 'src/bindings/settle.ts',
    from: 'return desiredShared(b, holder).filter((r) => !foreign.has(slotOf(r)));',
    to: 'return desiredShared(b, holder);',
    tests: ['src/agent/branch'],
  },
  {
    name: 'holder-tie-earlier',
    rule: 'ownership',
    what: 'of two sandboxes created in the same millisecond, the earlier takes the holding',
    file: 'src/bindings/settle.ts',
    from: '(best, m) => (best && best.createdAt > m.createdAt ? best : m)',
    to: '(best, m) => (best && best.createdAt >= m.createdAt ? best : m)',
    tests: ['src/agent/branch/branch.test.ts'],
  },
  {
    name: 'recovered-binding-torn-down',
    rule: 'convergence',
    what: 'after a lost ledger, a rebuilt branch binding with no sandbox record is torn down at once',
    file: 'src/bindings/settle.ts',
    from: 'const needed = members.length > 0 || recoveredHolder(ledger, key) !== undefined;',
    to: 'const needed = members.length > 0;',
    tests: ['src/agent/recovery/recovery-branch.test.ts'],
  },
  {
    name: 'recovery-holds-denied-branch',
    rule: 'ownership',
    what: 'recovery rebuilds a branch binding that EC2 says is not on this node’s trunk',
    file: 'src/agent/recovery/recovery-branches.ts',
    from: '    if (await ec2Denies(d, c)) {',
    to: '    if (false) {',
    tests: ['src/agent/recovery/recovery-branch.test.ts'],
  },
  {
    name: 'trunk-facts-stale-read',
    rule: 'ownership',
    what: 'a claim the cache misses is answered by a read begun before the question',
    file: 'src/agent/branch/trunk-facts.ts',
    from: '    if (last && last.startedAt >= since) return Promise.resolve(last);',
    to: '    if (last) return Promise.resolve(last);',
    tests: ['src/agent/branch/trunk-facts.test.ts'],
  },
  {
    name: 'del-asks-pod-cache',
    rule: 'DEL does not guess',
    what: 'DEL asks the Kubernetes API (the pod cache) about the pod it deletes',
    file: 'src/agent/cni-ops/del.ts',
    from: 'export async function delAttachment(ctx: DelContext, req: AttachRequest): Promise<void> {\n',
    to: "export async function delAttachment(ctx: DelContext, req: AttachRequest): Promise<void> {\n  await ctx.pods.lookup(req.pod.namespace ?? '', req.pod.name ?? '');\n",
    compiler: /Property 'pods' does not exist on type 'DelContext'/,
  },
  {
    name: 'check-changes-ledger',
    rule: 'convergence',
    what: 'CHECK removes a drifted attachment from the ledger instead of reporting it',
    file: 'src/agent/cni-ops/check.ts',
    from: '  if (problems.length > 0) {\n',
    to: '  if (problems.length > 0) {\n    ctx.ledger.remove(req.key);\n',
    compiler: /Property 'remove' does not exist on type 'Pick<Ledger, [^>]*>'/,
  },
  {
    name: 'adoption-ignores-gateway-mac',
    rule: 'ownership',
    what: "adoption takes any namespace holding the claimed address for the pod's, not the one behind its veth",
    file: 'src/agent/adoption/adopt.ts',
    from: '    if (gateway?.lladdr?.toLowerCase() !== hostMac) continue;',
    to: '    void gateway;',
    tests: ['src/agent/adoption/adoption.test.ts'],
  },
  {
    name: 'adoption-takes-recorded-address',
    rule: 'ownership',
    what: 'adoption records a second holder for an address a record already holds',
    file: 'src/agent/adoption/adopt.ts',
    from: '  if (d.ledger.get(key) !== undefined || d.ledger.findByIp(c.ip) !== undefined)',
    to: '  if (d.ledger.get(key) !== undefined)',
    tests: ['src/agent/adoption/adoption.test.ts'],
  },
  {
    name: 'adopted-lookup-any-record',
    rule: 'DEL does not guess',
    what: "a request naming another network finds vpcnet's own record by container ID alone",
    file: 'src/agent/adoption/adopted-lookup.ts',
    from: '          a.adopted !== undefined && a.key.containerId === key.containerId && a.key.ifName === key.ifName,',
    to: '          a.key.containerId === key.containerId && a.key.ifName === key.ifName,',
    tests: ['src/agent/adoption/adopted-lookup.test.ts'],
  },
  {
    name: 'recovery-holds-adopted-address',
    rule: 'ownership',
    what: "after adoption, recovery holds an adopted pod's address a second time and later releases it",
    file: 'src/agent/recovery/recovery.ts',
    from: '    .filter((k) => k.resources.length > 0 && (k.ip === undefined || !ledger.addressInUse(k.ip)));',
    to: '    .filter((k) => k.resources.length > 0);',
    tests: ['src/agent/adoption/adoption.test.ts'],
  },
];

async function testFiles(dir, under) {
  const out = [];
  for (const e of await readdir(join(dir, under), { withFileTypes: true })) {
    const p = join(under, e.name);
    if (e.isDirectory()) out.push(...(await testFiles(dir, p)));
    else if (e.name.endsWith('.test.ts')) out.push(p);
  }
  return out.sort();
}

/**
 * Orders `files` (in place) so that the tests beside the mutated file come first: they are the
 * likeliest to notice, and node:test reports a file's results only after the files before it, so
 * a run stopped at its first failure ends soonest when that failure is in an early file.
 */
export function nearestFirst(files, mutated) {
  const dir = dirname(mutated);
  const stem = basename(mutated).replace(/\.ts$/, '');
  const rank = (f) =>
    dirname(f) === dir && basename(f).startsWith(stem)
      ? 0
      : dirname(f) === dir
        ? 1
        : f.startsWith(dirname(dir))
          ? 2
          : 3;
  return files.sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
}

/** The name of the first failing test in TAP output (a `not ok` marked TODO is no failure). */
export function failingTest(tap) {
  for (const m of tap.matchAll(/^\s*not ok \d+ - (.*)$/gm)) if (!/ # TODO\b/.test(m[1])) return m[1];
  return undefined;
}

function withoutTestContext(env) {
  const { NODE_TEST_CONTEXT: _, ...rest } = env;
  return rest;
}

/**
 * Runs the test files against the copy at `cwd`. The first failing test decides (the mutation is
 * noticed): the run's whole process group is ended then rather than left to finish the files, and
 * its temporary files, kept inside the copy (TMPDIR), go with the copy.
 */
function run(cwd, files) {
  return new Promise((resolvePromise) => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        join(root, 'scripts', 'run-test-files.mjs'),
        // A mutation may leave a test waiting forever (an agent a failed assertion never stopped):
        // that test fails after two minutes, and its file's process is ended once its tests are done.
        '--timeout',
        '120000',
        ...files,
      ],
      // Run as a test run of its own, also when this script runs inside one (npm test): with the
      // parent's NODE_TEST_CONTEXT the child would report to a parent that is not listening. The
      // churn property runs 100 times instead of 1,000: the unit tests beside it kill the same
      // mutations, and its shrinking after a failure would cost minutes per mutation.
      {
        cwd,
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
        env: {
          ...withoutTestContext(process.env),
          NO_COLOR: '1',
          VPCNET_PROPERTY_RUNS: '100',
          TMPDIR: join(cwd, 'tmp'),
        },
      },
    );
    let output = '';
    let firstFailure;
    child.stdout.on('data', (d) => {
      output += d;
      firstFailure ??= failingTest(output);
      if (firstFailure !== undefined && child.exitCode === null) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
    });
    child.stderr.on('data', (d) => {
      output += d;
    });
    child.on('close', (code) => resolvePromise({ code: code ?? 1, output, firstFailure }));
  });
}

/** The type checker over the copy (its src/ and the repository's tsconfig). */
function typecheck(cwd) {
  return new Promise((resolvePromise) => {
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    const child = spawn(process.execPath, [tsc, '-p', cwd, '--pretty', 'false'], {
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => {
      output += d;
    });
    child.stderr.on('data', (d) => {
      output += d;
    });
    child.on('close', (code) => resolvePromise({ code: code ?? 1, output }));
  });
}

/** A copy of the sources to mutate (its own src/, the repository's node_modules). */
async function copyOfSources() {
  const work = await mkdtemp(join(tmpdir(), 'vpcnet-mutation-'));
  await cp(join(root, 'src'), join(work, 'src'), { recursive: true });
  for (const f of ['package.json', 'tsconfig.json']) await cp(join(root, f), join(work, f));
  await symlink(join(root, 'node_modules'), join(work, 'node_modules'));
  return work;
}

/** Applies one mutation to the copy at `work`, runs what judges it, restores the file. */
async function judge(work, m) {
  const path = join(work, m.file);
  const original = await readFile(path, 'utf8');
  const count = original.split(m.from).length - 1;
  if (count !== 1) return { ...m, outcome: 'stale', detail: `target text found ${count} times in ${m.file}` };
  await writeFile(path, original.replace(m.from, m.to));
  try {
    if (m.compiler !== undefined) {
      const started = Date.now();
      const r = await typecheck(work);
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      const refusal = r.output.split('\n').find((l) => m.compiler.test(l));
      const outcome = refusal !== undefined ? 'killed' : r.code === 0 ? 'survived' : 'error';
      const detail =
        `tsc, ${seconds} s` +
        (outcome === 'killed' ? `; refused: ${refusal.trim()}` : '') +
        (outcome === 'error' ? `; exit ${r.code}, not the expected error:\n${r.output.slice(-2000)}` : '');
      return { ...m, outcome, detail };
    }
    const files = [];
    for (const t of m.tests) {
      const found = await stat(join(work, t)).catch(() => undefined);
      if (!found) throw new Error(`${m.name}: no test folder or file ${t}`);
      files.push(...(found.isDirectory() ? await testFiles(work, t) : [t]));
    }
    nearestFirst(files, m.file);
    const started = Date.now();
    await rm(join(work, 'tmp'), { recursive: true, force: true });
    await mkdir(join(work, 'tmp'));
    const r = await run(work, files);
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    // Killed only by a failing test: a copy that cannot even load proves nothing about the tests.
    const ran = Number(/^# tests (\d+)$/m.exec(r.output)?.[1] ?? 0);
    // A run that reports no tests proves nothing either way (one stopped at a failure ran some).
    const outcome =
      r.firstFailure !== undefined ? 'killed' : ran === 0 ? 'error' : r.code === 0 ? 'survived' : 'error';
    const detail =
      `${files.length} test files, ${seconds} s` +
      (outcome === 'killed' ? `; stopped at the first failure: ${r.firstFailure}` : '') +
      (outcome === 'error' ? `; exit ${r.code}, ${ran} tests, none failed:\n${r.output.slice(-2000)}` : '');
    return { ...m, outcome, detail };
  } finally {
    await writeFile(path, original);
  }
}

/**
 * Runs the mutations; returns one result per mutation, in the list's order. Each worker mutates
 * its own copy of the sources, so they run side by side: VPCNET_MUTATION_WORKERS, default the
 * machine's cores, at most 4 (each run is one node process; more only crowd the cores).
 */
export async function mutationCheck(names = [], log = console.log) {
  const chosen = names.length === 0 ? MUTATIONS : MUTATIONS.filter((m) => names.includes(m.name));
  const unknown = names.filter((n) => !MUTATIONS.some((m) => m.name === n));
  if (unknown.length > 0) throw new Error(`unknown mutation(s): ${unknown.join(', ')}`);
  const wanted = Number(process.env.VPCNET_MUTATION_WORKERS ?? Math.min(availableParallelism(), 4));
  const workers = Math.max(1, Math.min(chosen.length, Number.isInteger(wanted) ? wanted : 1));
  const results = new Array(chosen.length);
  let next = 0;
  const copies = [];
  try {
    for (let i = 0; i < workers; i++) copies.push(await copyOfSources());
    await Promise.all(
      copies.map(async (work) => {
        while (next < chosen.length) {
          const i = next++;
          const r = await judge(work, chosen[i]);
          results[i] = r;
          log(
            r.outcome === 'stale'
              ? `STALE     ${r.name}: ${r.detail}`
              : `${r.outcome.toUpperCase().padEnd(9)} ${r.name} (${r.rule}): ${r.what} [${r.detail}]`,
          );
        }
      }),
    );
    return results;
  } finally {
    for (const work of copies) await rm(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && relative(process.argv[1], import.meta.filename) === '') {
  const args = process.argv.slice(2);
  if (args.includes('--list')) {
    for (const m of MUTATIONS) console.log(`${m.name.padEnd(22)} ${m.rule.padEnd(24)} ${m.what}`);
    process.exit(0);
  }
  const results = await mutationCheck(args.filter((a) => !a.startsWith('--')));
  const bad = results.filter((r) => r.outcome !== 'killed');
  console.log(
    `mutation check: ${results.length - bad.length} of ${results.length} mutations killed` +
      (bad.length > 0 ? `; not killed: ${bad.map((r) => r.name).join(', ')}` : ''),
  );
  process.exit(bad.length > 0 ? 1 : 0);
}
