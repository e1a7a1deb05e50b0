// The README's "Configuration" table, rendered from the settings table and kept between two
// marker comments; scripts/config-docs.ts writes it, readme-table.test.ts fails when it drifts.
import type { DocumentedVariable } from './setting.ts';
import { DOCUMENTED_VARIABLES } from './settings.ts';

export const TABLE_BEGIN =
  '<!-- config-table:begin (generated from src/config/settings.ts: npm run docs:config) -->';
export const TABLE_END = '<!-- config-table:end -->';

function cell(text: string): string {
  return text.replaceAll('|', '\\|');
}

export function renderConfigTable(variables: readonly DocumentedVariable[] = DOCUMENTED_VARIABLES): string {
  const rows = variables.map(
    (v) => `| \`${v.env}\` | ${cell(v.defaultText)} | ${v.upstream ? 'yes |' : '|'} ${cell(v.description)} |`,
  );
  return ['| variable | default | upstream name | meaning |', '|---|---|---|---|', ...rows].join('\n');
}

/** The README with the text between the markers replaced by `table`. */
export function spliceConfigTable(readme: string, table: string): string {
  const begin = readme.indexOf(TABLE_BEGIN);
  const end = readme.indexOf(TABLE_END);
  if (begin < 0 || end < begin) {
    throw new Error(`README has no configuration table between '${TABLE_BEGIN}' and '${TABLE_END}'`);
  }
  return `${readme.slice(0, begin + TABLE_BEGIN.length)}\n${table}\n${readme.slice(end)}`;
}
