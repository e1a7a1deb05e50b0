// Deprecated: the fake moved to testing/fake-cloud.ts (test doubles live in testing/). Kept only
// until src/agent/agent.test.ts imports it from there; then delete this file.
export * from './testing/fake-cloud.ts';
