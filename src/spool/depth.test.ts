import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { spoolDepth } from './depth.ts';
import { SPOOL_FILE_SUFFIX, SPOOL_TEMP_PREFIX } from './format.ts';

test('spool depth: pending DELs apart from entries set aside; a file the plugin is still writing is not one', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-spool-depth-'));
  try {
    assert.deepEqual(await spoolDepth(join(dir, 'missing')), { pending: 0, failed: 0, rejected: 0 });
    await writeFile(join(dir, `a${SPOOL_FILE_SUFFIX}`), '{}');
    await writeFile(join(dir, `${SPOOL_TEMP_PREFIX}b${SPOOL_FILE_SUFFIX}`), '{');
    await writeFile(join(dir, `c${SPOOL_FILE_SUFFIX}.failed`), '{}');
    await writeFile(join(dir, `d${SPOOL_FILE_SUFFIX}.rejected`), '');
    await writeFile(join(dir, `e${SPOOL_FILE_SUFFIX}.rejected`), '');
    assert.deepEqual(await spoolDepth(dir), { pending: 1, failed: 1, rejected: 2 });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
