// Convergence: the loop runs a pass each time its timer fires, and after one pass the kernel is
// exactly the intended state of the live attachments plus what is protected (a property).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { PeriodicLoop, type Timers } from '../infra/periodic.ts';
import { type Attachment, attachmentHostVeth, attachmentIp } from '../plan/attachment.ts';
import { MAIN_TABLE } from '../plan/pod-plan.ts';
import { nodeIdentities, nodeOwned } from './testing/comparable-state.ts';
import { ENI_RULE_ID, world } from './testing/reconcile-world.ts';

/** Timers a test fires by hand: no wall-clock windows. */
function manualTimers(): Timers & { fire(): void; pending(): number } {
  const queue = new Map<number, () => void>();
  let next = 0;
  return {
    setTimeout(fn) {
      queue.set(++next, fn);
      return next;
    },
    clearTimeout(h) {
      queue.delete(h as number);
    },
    fire() {
      const due = [...queue.values()];
      queue.clear();
      for (const fn of due) fn();
    },
    pending: () => queue.size,
  };
}

test('the loop runs a pass each time its timer fires, and none after stop', async () => {
  const timers = manualTimers();
  const passes: number[] = [];
  const w = await world({
    loop: (pass) =>
      new PeriodicLoop({
        run: async () => {
          passes.push(1);
          await pass();
        },
        intervalMs: 10_000,
        firstAfterMs: 10_000,
        timers,
      }),
  });
  const att = await w.attach();
  w.reconciler.start();
  w.kernel.deleteRoute('node', `${attachmentIp(att)}/32`);
  assert.equal(timers.pending(), 1, 'the first pass waits for its interval');
  timers.fire();
  while (passes.length < 1 || timers.pending() === 0) await new Promise((r) => setImmediate(r));
  assert.deepEqual(await w.problems(att), []);
  await w.reconciler.stop();
  w.kernel.deleteRoute('node', `${attachmentIp(att)}/32`);
  timers.fire();
  await new Promise((r) => setImmediate(r));
  assert.equal(passes.length, 1, 'no pass after stop');
  assert.notDeepEqual(await w.problems(att), []);
});

const DRIFTS = [
  'deleteLink',
  'setLinkDown',
  'deletePodAddress',
  'deleteHostRoute',
  'deleteRuleTo',
  'deleteRuleFrom',
  'deleteSnat',
  'deleteNetns',
] as const;

test('property: after one pass the kernel is exactly the intended state of the live attachments, plus what is protected', async () => {
  const attachmentArb = fc.record({
    routeTable: fc.constantFrom(MAIN_TABLE, 2),
    snat: fc.boolean(),
    adding: fc.boolean(),
    drift: fc.subarray([...DRIFTS]),
  });
  const orphanArb = fc.record({
    veths: fc.integer({ min: 0, max: 2 }),
    rules: fc.uniqueArray(fc.tuple(fc.constantFrom(512, 1536), fc.integer({ min: 1, max: 9 })), {
      selector: ([p, i]) => `${p}-${i}`,
      maxLength: 5,
    }),
    snat: fc.uniqueArray(fc.integer({ min: 1, max: 9 }), { maxLength: 4 }),
  });
  await fc.assert(
    fc.asyncProperty(fc.array(attachmentArb, { maxLength: 6 }), orphanArb, async (plans, orphans) => {
      const w = await world();
      const atts: { att: Attachment; netnsGone: boolean }[] = [];
      for (const p of plans) {
        const att = await w.attach({
          routeTable: p.routeTable,
          snat: p.snat,
          ...(p.adding ? { phase: 'adding' as const } : {}),
        });
        const [ip, veth] = [attachmentIp(att) ?? '', attachmentHostVeth(att)];
        // An ADD at work is not drift: only complete attachments drift here.
        const drift = p.adding ? [] : p.drift;
        for (const d of drift) {
          if (d === 'deleteLink') w.kernel.deleteLink(veth);
          if (d === 'setLinkDown') w.kernel.setLinkDown(veth);
          if (d === 'deletePodAddress') w.kernel.deleteAddress(att.netns, 'eth0', `${ip}/32`);
          if (d === 'deleteHostRoute') w.kernel.deleteRoute('node', `${ip}/32`);
          if (d === 'deleteRuleTo') w.kernel.deleteRule({ priority: 512, to: `${ip}/32`, table: MAIN_TABLE });
          if (d === 'deleteRuleFrom') w.kernel.deleteRule({ priority: 1536, from: `${ip}/32`, table: 2 });
          if (d === 'deleteSnat') w.kernel.deleteSnatElement(ip);
          if (d === 'deleteNetns') w.kernel.deleteNetns(att.netns);
        }
        atts.push({ att, netnsGone: drift.includes('deleteNetns') });
      }
      for (let i = 0; i < orphans.veths; i++) await w.attach({ unrecorded: true, ip: `10.0.4.${i + 1}` });
      for (const [priority, i] of orphans.rules) {
        const ip = `10.0.3.${i}/32`;
        w.kernel.addRule(
          priority === 512 ? { priority, to: ip, table: MAIN_TABLE } : { priority, from: ip, table: 2 },
        );
      }
      for (const i of orphans.snat) w.kernel.snatSet?.add(`10.0.3.${i}`);
      const present = new Set(nodeIdentities(await w.dp.observeNode()));
      const expected = [ENI_RULE_ID];
      for (const { att, netnsGone } of atts) {
        // Live and reachable: everything it owns. Namespace gone: what is left waits for its DEL.
        expected.push(...nodeOwned(att).filter((id) => !netnsGone || present.has(id)));
      }

      await w.reconciler.runOnce();

      for (const { att, netnsGone } of atts) {
        if (!netnsGone) assert.deepEqual(await w.problems(att), []);
      }
      assert.deepEqual(nodeIdentities(await w.dp.observeNode()), expected.sort());
      // Converged: a second pass finds nothing to do.
      const again = await w.reconciler.runOnce();
      assert.deepEqual([again.repaired, again.collected, again.failures], [[], [], []]);
    }),
    { numRuns: 150 },
  );
});
