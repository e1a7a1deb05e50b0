// The suites of test/kernels/uml/ again under Debian unstable's UML (VPCNET_UML=newer), the kernel that
// hosts with AMX CPUs run them on: CI runs this (scripts/test.mjs --exhaustive), so both kernels'
// results are known on every host, whichever one `npm test` chose here.
import { before, describe, test } from 'node:test';
import { umlGate, umlSuiteTests } from './uml-fixture.ts';

const runnerEnv = { VPCNET_UML: 'newer' };
const uml = await umlGate(runnerEnv);

describe("suites that need 802.1q, under Debian unstable's UML", {
  skip: uml.skip,
  concurrency: true,
}, () => {
  before(() => uml.assertReady());
  umlSuiteTests(test, runnerEnv);
});
