// The ownership rule under random interleavings of ADD, stale DEL and agent restarts for sandboxes
// of the same pods, checked after every step against the kernel, the ledger and the pool.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { attachmentHostVeth, attachmentIp } from '../plan/attachment.ts';
import { agentWorlds } from './testing/agent-world.ts';
import { cniRequest } from './testing/cni-request.ts';

const { world } = agentWorlds();

test('ownership holds under random ADD / stale DEL / restart interleavings, also when operations overlap', async () => {
  const cniOp = fc.record({
    op: fc.constantFrom('add' as const, 'del' as const),
    pod: fc.integer({ min: 0, max: 2 }),
    sandbox: fc.integer({ min: 0, max: 2 }),
  });
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.oneof(
          { weight: 4, arbitrary: cniOp },
          // Several runtimes' requests in flight at once (the agent serializes per pod only).
          {
            weight: 2,
            arbitrary: fc.record({
              op: fc.constant('burst' as const),
              ops: fc.array(cniOp, { minLength: 2, maxLength: 6 }),
            }),
          },
          { weight: 1, arbitrary: fc.record({ op: fc.constant('restart' as const) }) },
        ),
        { minLength: 1, maxLength: 40 },
      ),
      async (ops) => {
        // 9 sandboxes at most, 11 addresses: with no cooldown an ADD never has to wait for one
        // (and if it had to, it would fail within a second instead of stalling the property).
        const w = await world({ IP_COOLDOWN_PERIOD: '0', VPCNET_ADD_WAIT_SECONDS: '1' });
        let agent = await w.start();
        const run = async (o: { op: 'add' | 'del'; pod: number; sandbox: number }) => {
          const cid = `p${o.pod}s${o.sandbox}`;
          const ns = await w.netns(cid);
          return agent.cni(cniRequest(o.op === 'add' ? 'ADD' : 'DEL', cid, ns, `pod${o.pod}`, `uid${o.pod}`));
        };
        try {
          for (const o of ops) {
            if (o.op === 'restart') {
              await agent.stop();
              agent = await w.start();
            } else {
              const batch = o.op === 'burst' ? o.ops : [o];
              const outs = await Promise.all(batch.map(run));
              for (const [i, out] of outs.entries()) {
                const o = batch[i];
                // An ADD of a sandbox that is attached already fails (CNI 1.0) and changes nothing.
                const refused = o?.op === 'add' && out.exitCode !== 0 && JSON.parse(out.stdout).code === 130;
                if (!refused) assert.equal(out.exitCode, 0, `${JSON.stringify(o)}: ${out.stdout}`);
              }
            }
            // Invariant: the kernel holds exactly what live attachments own, each address has one owner.
            const live = agent.ledger.list();
            assert.ok(
              live.every((a) => a.phase === undefined),
              'an ADD that answered left its record half-done',
            );
            const ips = live.map((a) => attachmentIp(a) ?? '');
            assert.equal(new Set(ips).size, ips.length, 'an address has two owners');
            const owned = new Set(live.map(attachmentHostVeth));
            assert.deepEqual(w.kernel.veths().sort(), [...owned].sort());
            assert.deepEqual(w.kernel.snatElements(), [...ips].sort());
            for (const ip of ips) assert.equal(agent.pool.state(ip)?.kind, 'assigned');
            // And the other way round: every address the pool calls assigned has a live owner.
            const assigned = agent.pool
              .enis()
              .flatMap((e) => [...agent.pool.addresses(e.eniId)].filter(([, st]) => st.kind === 'assigned'))
              .map(([ip]) => ip);
            assert.deepEqual(assigned.sort(), [...ips].sort(), 'an assigned address has no attachment');
          }
        } finally {
          await agent.stop();
        }
      },
    ),
    { numRuns: 100 },
  );
});
