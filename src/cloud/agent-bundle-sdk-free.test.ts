// The agent's bundle carries no AWS SDK: esbuild bundles src/bin/vpcnetd.ts as scripts/build.mjs
// does and no input may come from @aws-sdk or @smithy (biome's noRestrictedImports catches a
// direct import; this catches one that arrives through a dependency).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

test('bin/vpcnetd bundles no module of @aws-sdk or @smithy', async () => {
  const result = await build({
    entryPoints: [fileURLToPath(new URL('../bin/vpcnetd.ts', import.meta.url))],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  const inputs = Object.keys(result.metafile.inputs);
  assert.ok(
    inputs.some((i) => i.endsWith('src/cloud/ec2-query/ec2-query-client.ts')),
    'the bundle holds our client',
  );
  assert.deepEqual(
    inputs.filter((i) => /node_modules\/(@aws-sdk|@smithy)\//.test(i)),
    [],
  );
});
