import assert from 'node:assert/strict';
import { test } from 'node:test';
import { vpcnetdHelp } from './help.ts';
import { DOCUMENTED_VARIABLES } from './settings.ts';

test('--help starts with the usage line and lists every variable with its default', () => {
  const help = vpcnetdHelp();
  assert.match(help, /^Usage: vpcnetd/);
  for (const v of DOCUMENTED_VARIABLES) {
    assert.ok(help.includes(`  ${v.env} (default: ${v.defaultText}`), v.env);
  }
  assert.match(help, /WARM_IP_TARGET \(default: unset; upstream name\)/);
  assert.match(help, /VPCNET_ADD_WAIT_SECONDS \(default: 20\)/);
});

test('descriptions wrap to the terminal width and lose markdown backticks', () => {
  const help = vpcnetdHelp([
    { env: 'A', defaultText: '1', description: `${'word '.repeat(40)}\`code\``, upstream: false },
  ]);
  const lines = help.split('\n');
  for (const line of lines) assert.ok(line.length <= 100, line);
  assert.ok(lines.some((l) => l.startsWith('      word')));
  assert.ok(!help.includes('`'));
  assert.ok(help.includes(' code'));
});
