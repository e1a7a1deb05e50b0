// The layer table of docs/design.md ("Layers") is the one statement of what may import what; this
// turns it into biome.json's `noRestrictedImports` overrides, so the lint enforces exactly the table.
// Usage: node --import tsx scripts/layers.ts [--write]
//   (none)    exits 1, naming the difference, when biome.json's overrides are not the table's
//   --write   rewrites biome.json's overrides from the table
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const repoRoot = join(import.meta.dirname, '..');

export interface Layer {
  readonly name: string;
  /** Layers its shipped code may import; '*' for anything. */
  readonly mayImport: readonly string[] | '*';
  /** Layers its tests (and testing/ doubles) may import besides. */
  readonly testsAlso: readonly string[];
  /** Package families it may not load. */
  readonly mayNotLoad: readonly ('sdk' | 'kubernetes-client')[];
}

const BEGIN = '<!-- layers:begin';
const END = '<!-- layers:end -->';

function names(cell: string): string[] {
  const t = cell.trim();
  if (t === '' || t === 'nothing of ours') return [];
  return t.split(',').map((n) => n.trim().replace(/`/g, ''));
}

/** The table between the layers markers of `markdown`; throws naming what is malformed. */
export function parseLayerTable(markdown: string): Layer[] {
  const start = markdown.indexOf(BEGIN);
  const end = markdown.indexOf(END);
  if (start < 0 || end < start) throw new Error('docs/design.md has no layers:begin/layers:end table');
  const rows = markdown
    .slice(start, end)
    .split('\n')
    .filter((l) => l.startsWith('| `'));
  return rows.map((row) => {
    const cells = row.split('|').slice(1, -1);
    if (cells.length !== 4) throw new Error(`layer table row has ${cells.length} cells, not 4: ${row}`);
    const [layer = '', may = '', tests = '', load = ''] = cells;
    const name = layer.trim().replace(/`/g, '');
    if (!/^[a-z-]+$/.test(name)) throw new Error(`not a layer name: ${layer.trim()}`);
    const mayNotLoad: Layer['mayNotLoad'][number][] = [];
    if (/any SDK/.test(load)) mayNotLoad.push('sdk');
    if (/Kubernetes client/.test(load)) mayNotLoad.push('kubernetes-client');
    return {
      name,
      mayImport: may.trim() === 'anything' ? '*' : names(may),
      testsAlso: names(tests),
      mayNotLoad,
    };
  });
}

/** Where a layer's files are: bench/ at the top, every other layer a folder of src/. */
export function layerDir(name: string): string {
  return name === 'bench' ? 'bench' : `src/${name}`;
}

const AWS_SDK = {
  group: ['@aws-sdk/*', '@smithy/*'],
  message:
    'shipped code talks to AWS through src/cloud/ec2-query, not the AWS SDK (its load costs the agent ~30 MiB and 100+ ms); the SDK is a devDependency for tests',
};
const ANY_SDK = {
  group: ['@aws-sdk/*', '@smithy/*', '@kubernetes/*', 'fast-check'],
  message: 'layering: this layer loads no SDK (it runs in the plugin or is the protocol it speaks)',
};
const KUBE_CLIENT = {
  group: ['@kubernetes/*'],
  message:
    'src/pods has its own Kubernetes client (kube-client.ts); a general one costs ~14 MB of bin/vpcnetd and tens of MiB of RSS',
};
const TEST_DOUBLES = {
  group: ['**/testing/**'],
  message: 'shipped code never imports a test double (testing/ folders; docs/design.md, Layers)',
};

interface Pattern {
  readonly group: readonly string[];
  readonly message: string;
}

function forbidden(all: readonly Layer[], self: Layer, allowed: readonly string[]): string[] {
  return all
    .map((l) => l.name)
    .filter((n) => n !== self.name && n !== 'bench' && !allowed.includes(n))
    .map((n) => `**/${n}/**`);
}

function override(includes: string[], patterns: Pattern[]): object {
  return {
    includes,
    linter: { rules: { style: { noRestrictedImports: { level: 'error', options: { patterns } } } } },
  };
}

/** biome.json's overrides for `layers`: per layer, one for its shipped code and one for its tests. */
export function biomeOverrides(layers: readonly Layer[]): object[] {
  const out: object[] = [];
  for (const l of layers) {
    if (l.name === 'bench') continue; // not shipped, and it may import anything
    const dir = layerDir(l.name);
    const packages: Pattern[] = [
      ...(l.mayNotLoad.includes('sdk') ? [ANY_SDK] : [AWS_SDK]),
      ...(l.mayNotLoad.includes('kubernetes-client') ? [KUBE_CLIENT] : []),
    ];
    const shipped = [`${dir}/**`, `!${dir}/**/*.test.ts`, `!${dir}/**/testing/**`];
    const tests = [`${dir}/**/*.test.ts`, `${dir}/**/testing/**`];
    if (l.mayImport === '*') {
      out.push(override(shipped, [TEST_DOUBLES, ...packages]));
      continue;
    }
    const allowed = l.mayImport;
    const only = (list: readonly string[]) => (list.length === 0 ? 'itself' : list.join(', '));
    const layering = (who: string, list: readonly string[], not: string[]): Pattern[] =>
      not.length === 0
        ? []
        : [
            {
              group: not,
              message: `layering: ${who} may import only ${only(list)} (docs/design.md, Layers)`,
            },
          ];
    out.push(
      override(shipped, [
        ...layering(dir, allowed, forbidden(layers, l, allowed)),
        TEST_DOUBLES,
        ...packages,
      ]),
    );
    const testAllowed = [...allowed, ...l.testsAlso];
    const testPackages = l.mayNotLoad.includes('sdk') ? [ANY_SDK] : [];
    out.push(
      override(tests, [
        ...layering(`tests of ${dir}`, testAllowed, forbidden(layers, l, testAllowed)),
        ...testPackages,
      ]),
    );
  }
  return out;
}

/** The table's layers against the tree: every folder of src/ has a row, every row a folder. */
export function tableMatchesTree(layers: readonly Layer[], srcFolders: readonly string[]): string[] {
  const rows = new Set(layers.map((l) => l.name));
  const problems: string[] = [];
  for (const f of srcFolders) if (!rows.has(f)) problems.push(`src/${f} has no row in the layer table`);
  for (const l of layers) {
    if (l.name !== 'bench' && !srcFolders.includes(l.name))
      problems.push(`the table's ${l.name} is no folder of src/`);
    const named = [...(l.mayImport === '*' ? [] : l.mayImport), ...l.testsAlso];
    for (const n of named) if (!rows.has(n)) problems.push(`${l.name} names ${n}, which has no row`);
  }
  return problems;
}

function main(): void {
  const md = readFileSync(join(repoRoot, 'docs', 'design.md'), 'utf8');
  const path = join(repoRoot, 'biome.json');
  const biome = JSON.parse(readFileSync(path, 'utf8')) as { overrides?: unknown };
  const wanted = biomeOverrides(parseLayerTable(md));
  if (process.argv.includes('--write')) {
    writeFileSync(path, `${JSON.stringify({ ...biome, overrides: wanted }, null, 2)}\n`);
    return;
  }
  if (JSON.stringify(biome.overrides) !== JSON.stringify(wanted)) {
    console.error("biome.json is not what docs/design.md's layer table says: run `npm run docs:layers`");
    process.exit(1);
  }
}

if (process.argv[1] === import.meta.filename) main();
