import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { renderConfigTable, spliceConfigTable, TABLE_BEGIN, TABLE_END } from './readme-table.ts';
import { DOCUMENTED_VARIABLES } from './settings.ts';

const README = new URL('../../README.md', import.meta.url);

test("the README's configuration table is the one the settings table renders (npm run docs:config)", () => {
  const readme = readFileSync(README, 'utf8');
  assert.equal(spliceConfigTable(readme, renderConfigTable()), readme);
});

test('the table has one row per documented variable, with its default', () => {
  const lines = renderConfigTable().split('\n');
  assert.equal(lines.length, 2 + DOCUMENTED_VARIABLES.length);
  for (const v of DOCUMENTED_VARIABLES) {
    const row = lines.find((l) => l.startsWith(`| \`${v.env}\` |`));
    assert.ok(row?.includes(`| ${v.defaultText} |`), v.env);
  }
});

test('a pipe in a cell is escaped so that the row keeps its columns', () => {
  const table = renderConfigTable([{ env: 'A', defaultText: 'x|y', description: 'p | q', upstream: true }]);
  assert.equal(table.split('\n')[2], '| `A` | x\\|y | yes | p \\| q |');
});

test('splicing replaces only what lies between the markers', () => {
  const readme = `intro\n${TABLE_BEGIN}\nold\n${TABLE_END}\noutro\n`;
  assert.equal(spliceConfigTable(readme, 'new'), `intro\n${TABLE_BEGIN}\nnew\n${TABLE_END}\noutro\n`);
  assert.throws(() => spliceConfigTable('no markers', 'new'), /config-table:begin/);
});
