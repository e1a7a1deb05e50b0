// The fragmentation bench's own check, on a small seeded run (the simulation is deterministic:
// seeded emulator, seeded stream, every call awaited in turn): with the census no prefix is asked
// blindly, secondary IPs are named, and the subnet is read once per census period; without it EC2
// answers InsufficientCidrBlocks and picks every /32.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runFragmentation } from './fragmentation-run.ts';

test('a small fragmented run: the census spares every blind prefix ask and keeps more /28s whole', async () => {
  const common = {
    nodes: 8,
    pods: 800,
    seed: 3,
    population: 320,
    preFragmentation: { tenantEnis: 250, addressesPerEni: 2 },
  };
  const up = await runFragmentation({ mode: 'upstream', ...common });
  const census = await runFragmentation({ mode: 'census', ...common });
  assert.ok(up.insufficientCidrBlocks > 0, 'the run is fragmented enough to matter');
  assert.equal(census.insufficientCidrBlocks, 0);
  assert.ok(census.prefixAsksSpared > 0);
  assert.equal(up.secondaryIps.named, 0);
  assert.ok(census.secondaryIps.named > census.secondaryIps.counted);
  assert.ok(
    census.freePrefixesAtEnd >= up.freePrefixesAtEnd,
    `${census.freePrefixesAtEnd} vs ${up.freePrefixesAtEnd}`,
  );
  const periods = Math.ceil(census.simulatedS / 300);
  assert.ok(census.censusDescribes <= periods + 1, `${census.censusDescribes} reads over ${periods} periods`);
  assert.equal(up.censusDescribes, 0);
});
