import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { VPCNET_VERSION } from './version.ts';

test('the version support bundles report is package.json version', async () => {
  const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  assert.equal(VPCNET_VERSION, pkg.version);
});
