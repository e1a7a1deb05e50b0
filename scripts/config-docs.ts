// Renders the README's configuration table from src/config/settings.ts.
// Usage: node --import tsx scripts/config-docs.ts [--write]
//   without --write: exits 1 and says so when the README's table is out of date.
import { readFileSync, writeFileSync } from 'node:fs';
import { renderConfigTable, spliceConfigTable } from '../src/config/readme-table.ts';

const readmePath = new URL('../README.md', import.meta.url);
const readme = readFileSync(readmePath, 'utf8');
const updated = spliceConfigTable(readme, renderConfigTable());
if (process.argv.includes('--write')) {
  if (updated !== readme) writeFileSync(readmePath, updated);
  process.stdout.write(
    updated === readme
      ? 'README.md: configuration table up to date\n'
      : 'README.md: configuration table rewritten\n',
  );
} else if (updated !== readme) {
  process.stderr.write('README.md: configuration table is out of date; run npm run docs:config\n');
  process.exit(1);
}
