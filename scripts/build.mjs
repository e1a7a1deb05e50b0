// Bundles each executable into one self-contained file under bin/, and compiles the plugin.
// The plugin is exec'd once per pod operation: bin/vpcnet is the native forwarder
// (src/plugin/native/*.c), because Node's start was the largest part of an ADD (docs/design.md,
// "The plugin"). The TypeScript forwarder it mirrors is still bundled, alone and minified, as
// bin/vpcnet-js: src/plugin/native-*.test.ts hold the two to the same behaviour.
import { execFileSync } from 'node:child_process';
import { chmod, mkdir, readdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { build } from 'esbuild';

const entries = [
  { name: 'vpcnet-js', entry: 'src/bin/vpcnet-js.ts', minify: true },
  { name: 'vpcnetd', entry: 'src/bin/vpcnetd.ts', minify: false },
  { name: 'vpcnetctl', entry: 'src/bin/vpcnetctl.ts', minify: false },
  // vpcnetctl as a kubectl plugin (`kubectl vpcnet audit`): put bin/ on PATH, or copy this file.
  { name: 'kubectl-vpcnet', entry: 'src/bin/kubectl-vpcnet.ts', minify: false },
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

await compileNative('src/plugin/native', 'bin/vpcnet');
// The agent's resident rtnetlink helper (src/dataplane/netlink/): worker threads, raw netlink.
await compileNative('src/dataplane/netlink/native', 'bin/vpcnet-netlink', ['-pthread']);

/** Static when the toolchain has a static libc (one file that runs on any Linux host), else dynamic. */
async function compileNative(sourceDir, outfile, extraFlags = []) {
  const sources = (await readdir(sourceDir)).filter((n) => n.endsWith('.c')).map((n) => join(sourceDir, n));
  const flags = ['-O2', '-s', '-Wall', '-Wextra', '-Werror', ...extraFlags];
  const tmp = `${outfile}.tmp-${process.pid}`;
  const cc = (extra) =>
    execFileSync('cc', [...flags, ...extra, '-o', tmp, ...sources], { stdio: ['ignore', 'ignore', 'pipe'] });
  try {
    try {
      cc(['-static']);
    } catch (staticErr) {
      if (staticErr.code === 'ENOENT') throw staticErr;
      cc([]);
    }
  } catch (err) {
    const why =
      err.code === 'ENOENT'
        ? 'no C compiler (cc) found; install gcc and libc6-dev'
        : String(err.stderr ?? err);
    throw new Error(`cannot compile ${sourceDir}: ${why}`);
  }
  // Atomic: a lab or runtime may exec bin/vpcnet while it is being rebuilt.
  await rename(tmp, outfile);
}
