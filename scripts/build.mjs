// Bundles each executable into one self-contained file under bin/.
// The plugin is exec'd once per pod operation, so it is bundled alone and minified: nothing else loads.
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { build } from 'esbuild';

const entries = [
  { name: 'vpcnet', entry: 'src/bin/vpcnet.ts', minify: true },
  { name: 'vpcnetd', entry: 'src/bin/vpcnetd.ts', minify: false },
  { name: 'vpcnetctl', entry: 'src/bin/vpcnetctl.ts', minify: false },
];
await mkdir('bin', { recursive: true });
// The bundles are CommonJS files without an extension; the repo's package.json says "type":
// "module", so bin/ gets its own package.json to make Node load them as CommonJS.
await writeFile('bin/package.json', '{ "type": "commonjs" }\n');
await Promise.all(
  entries.map(async (e) => {
    const outfile = `bin/${e.name}`;
    await build({
      entryPoints: [e.entry],
      outfile,
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'cjs',
      minify: e.minify,
      sourcemap: false,
      legalComments: 'none',
      banner: { js: '#!/usr/bin/env node' },
      logLevel: 'warning',
    });
    await chmod(outfile, 0o755);
  }),
);
