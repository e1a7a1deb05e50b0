// The layer table of docs/design.md is the one statement of what may import what: every folder of
// src/ has a row, biome.json's import restrictions are exactly the ones the table generates
// (scripts/layers.ts; `npm run docs:layers` rewrites them), and the lint really refuses what the
// table forbids (probe files linted in a scratch copy of the configuration).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { biomeOverrides, layerDir, parseLayerTable, repoRoot, tableMatchesTree } from '../scripts/layers.ts';

const layers = parseLayerTable(readFileSync(join(repoRoot, 'docs', 'design.md'), 'utf8'));
const srcFolders = readdirSync(join(repoRoot, 'src')).filter((n) =>
  statSync(join(repoRoot, 'src', n)).isDirectory(),
);

test('every folder of src/ has a row in the layer table, and every row names a folder and known layers', () => {
  assert.deepEqual(tableMatchesTree(layers, srcFolders), []);
  assert.ok(layers.some((l) => l.name === 'bench'));
});

test("biome.json's import restrictions are the table's (run `npm run docs:layers` after editing it)", () => {
  const biome = JSON.parse(readFileSync(join(repoRoot, 'biome.json'), 'utf8')) as { overrides: unknown };
  assert.deepEqual(biome.overrides, biomeOverrides(layers));
});

test("no layer has a subfolder named like another layer (the lint's globs would take one for the other)", () => {
  const names = new Set(layers.map((l) => l.name));
  const clashes: string[] = [];
  const walk = (dir: string, layer: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (!e.isDirectory()) continue;
      if (names.has(e.name) && e.name !== layer) clashes.push(`${dir}/${e.name}`);
      walk(join(dir, e.name), layer);
    }
  };
  for (const l of layers) walk(join(repoRoot, layerDir(l.name)), l.name);
  assert.deepEqual(clashes, []);
});

test('the lint refuses an import the table forbids, a test double in shipped code and the AWS SDK, and lets the rest through', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vpcnet-layers-'));
  try {
    writeFileSync(join(dir, 'biome.json'), readFileSync(join(repoRoot, 'biome.json'), 'utf8'));
    const probe = (path: string, text: string) => {
      mkdirSync(join(dir, path, '..'), { recursive: true });
      writeFileSync(join(dir, path), text);
    };
    probe('src/metrics/probe.ts', "import { x } from '../agent/stats.ts';\nexport const y = x;\n");
    probe('src/ledger/probe.ts', "import { x } from '../plan/testing/double.ts';\nexport const y = x;\n");
    probe(
      'src/cloud/probe.ts',
      "import { EC2Client } from '@aws-sdk/client-ec2';\nexport const y = EC2Client;\n",
    );
    probe('src/plugin/probe.ts', "import { x } from '../agent/cni-ops/del.ts';\nexport const y = x;\n");
    probe('src/agent/probe.ts', "import { x } from '../ledger/ledger.ts';\nexport const y = x;\n");
    probe('src/ipam/probe.test.ts', "import { x } from '../emulator/api.ts';\nexport const y = x;\n");
    const biome = join(repoRoot, 'node_modules', '.bin', 'biome');
    const r = spawnSync(biome, ['lint', '--max-diagnostics=50', 'src'], { cwd: dir, encoding: 'utf8' });
    const out = r.stdout + r.stderr;
    const refused = (file: string) =>
      new RegExp(`src/${file}:\\d+:\\d+ lint/style/noRestrictedImports`).test(out);
    assert.ok(refused('metrics/probe.ts'), `metrics importing the agent passed:\n${out}`);
    assert.ok(refused('ledger/probe.ts'), 'shipped code importing a test double passed');
    assert.ok(refused('cloud/probe.ts'), 'shipped code loading the AWS SDK passed');
    assert.ok(refused('plugin/probe.ts'), 'the plugin importing the agent passed');
    assert.ok(!refused('agent/probe.ts'), 'the agent importing the ledger was refused');
    assert.ok(!refused('ipam/probe.test.ts'), 'a test of ipam importing the emulator was refused');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
