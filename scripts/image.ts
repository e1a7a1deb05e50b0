// `npm run image`: builds the OCI image localhost/vpcnet:<version> (and :latest) with podman, from
// Debian's archive and this checkout only (image/README.md says what is in it and why).
// Usage: node --import tsx scripts/image.ts [--apt-sources FILE] [--json]
//   --apt-sources FILE  the apt sources the Debian base is made from
//                       (default /etc/apt/sources.list.d/debian.sources, this machine's own)
//   --json              print {image, tags, id, sizeBytes, base} on stdout instead of a sentence
// Progress goes to stderr, one line per step. The base is cached by a hash of its recipe.
import { copyFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CommandFailed, runProcess, runToSuccess } from '../src/infra/process.ts';
import { stderrProgress } from '../src/lab/progress.ts';
import { BASE_RECIPE, baseImageTag, imageNames, mmdebstrapArgv, podmanBuildArgv } from './image-recipe.ts';

const repoRoot = resolve(import.meta.dirname, '..');
const DEFAULT_APT_SOURCES = '/etc/apt/sources.list.d/debian.sources';
/** What /opt/vpcnet/bin holds (image layout, fixed by issue 10); bin/package.json makes them CommonJS. */
const SHIPPED = ['vpcnetd', 'vpcnetctl', 'vpcnet', 'vpcnet-netlink', 'package.json'];

class ImageError extends Error {}

async function requireProgram(program: string, debianPackage: string, why: string): Promise<void> {
  const found = await runProcess(['sh', '-c', `command -v ${program}`]);
  if (found.code !== 0) {
    throw new ImageError(`${program} not found (${why}); install it with: apt-get install ${debianPackage}`);
  }
}

async function imageExists(name: string): Promise<boolean> {
  return (await runProcess(['podman', 'image', 'exists', name])).code === 0;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: { 'apt-sources': { type: 'string' }, json: { type: 'boolean' } },
  });
  const step = stderrProgress('vpcnet image:');
  await requireProgram('podman', 'podman', 'the image is built and stored with podman');
  const version = (JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as { version: string })
    .version;
  const names = imageNames(version);

  step('building bin/ (node scripts/build.mjs)');
  await runToSuccess([process.execPath, join(repoRoot, 'scripts', 'build.mjs')], {
    env: { ...process.env },
  }).catch((err: unknown) => {
    throw new ImageError(`the build failed: ${err instanceof Error ? err.message : String(err)}`);
  });

  const sourcesFile = values['apt-sources'] ?? DEFAULT_APT_SOURCES;
  const sources = await readFile(sourcesFile, 'utf8').catch(() => {
    throw new ImageError(`cannot read the apt sources ${sourcesFile}: pass --apt-sources FILE`);
  });
  const base = baseImageTag(BASE_RECIPE, sources);
  const work = await mkdtemp(join(tmpdir(), 'vpcnet-image-'));
  try {
    if (await imageExists(base)) {
      step(`base ${base} is cached`);
    } else {
      await requireProgram('mmdebstrap', 'mmdebstrap', 'the Debian base is made with mmdebstrap');
      step(`making the Debian base with mmdebstrap (${BASE_RECIPE.suite}, ${sourcesFile})`);
      const tar = join(work, 'base.tar');
      await runToSuccess(mmdebstrapArgv(BASE_RECIPE, sourcesFile, tar));
      step(`importing the base into podman as ${base}`);
      await runToSuccess(['podman', 'import', '--quiet', tar, base]);
      await rm(tar, { force: true });
    }

    step('preparing the build context (bin/, a stripped copy of this Node)');
    const context = join(work, 'context');
    await mkdir(join(context, 'bin'), { recursive: true });
    for (const f of SHIPPED) await copyFile(join(repoRoot, 'bin', f), join(context, 'bin', f));
    await copyNodeRuntime(join(context, 'node'));

    const previous = (
      await runProcess(['podman', 'image', 'inspect', '--format', '{{.Id}}', names.versioned])
    ).stdout.trim();
    step(`podman build ${names.versioned}`);
    const id = (
      await runToSuccess(
        podmanBuildArgv({
          base,
          containerfile: join(repoRoot, 'image', 'Containerfile'),
          context,
          names,
          version,
        }),
      )
    ).stdout.trim();
    // The image this build replaced under the same tags, unless a container still uses it.
    if (previous !== '' && !id.startsWith(previous) && !previous.startsWith(id)) {
      await runProcess(['podman', 'rmi', previous]);
    }
    const size = Number(
      (await runToSuccess(['podman', 'image', 'inspect', '--format', '{{.Size}}', names.versioned])).stdout,
    );
    step(`done: ${names.versioned}, ${(size / 1e6).toFixed(1)} MB`);
    if (values.json === true) {
      process.stdout.write(
        `${JSON.stringify({ image: names.versioned, tags: [names.versioned, names.latest], id, sizeBytes: size, base })}\n`,
      );
    } else {
      process.stdout.write(`${names.versioned} (also ${names.latest}): ${(size / 1e6).toFixed(1)} MB\n`);
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** The Node that runs this script, without its debug symbols (99 → 86 MB); copied as is without strip. */
async function copyNodeRuntime(target: string): Promise<void> {
  const stripped = await runProcess(['strip', '--strip-all', '-o', target, process.execPath]);
  if (stripped.code !== 0) await copyFile(process.execPath, target);
}

main().catch((err: unknown) => {
  const message =
    err instanceof ImageError || err instanceof CommandFailed
      ? err.message
      : err instanceof Error
        ? (err.stack ?? err.message)
        : String(err);
  process.stderr.write(`vpcnet image: ${message}\n`);
  process.exit(1);
});
