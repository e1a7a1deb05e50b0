// Noise: what a request may carry that must change nothing about its outcome. Extra and unknown
// config keys (any JSON, deeply nested, huge, any Unicode), other environment variables (CNI_* ones
// the plugin does not know too), odd but valid CNI_ARGS pairs, a strange CNI_PATH, indentation.
import fc from 'fast-check';
import type { Mutation } from './draft.ts';

const noNul = (s: string) => s.replaceAll('\u0000', '');

/** Unknown config keys: prefixed, so none can be a key the plugin or the agent reads. */
const extraKeys = fc.dictionary(
  fc.string({ unit: 'binary', maxLength: 12 }).map((k) => `x-${k}`),
  fc.jsonValue({ maxDepth: 4 }),
  { maxKeys: 4 },
);

/** Deep nesting, as text: JSON.stringify itself cannot write it (it recurses). */
const deep = fc
  .tuple(fc.integer({ min: 1, max: 20_000 }), fc.constantFrom(['[', ']'], ['{"d":', '}']))
  .map(([depth, [open, close]]) => `${open.repeat(depth)}0${close.repeat(depth)}`);

/** A long value: a random piece repeated up to 64 KiB (the request stays far below the agent's 1 MiB). */
const huge = fc
  .tuple(fc.string({ unit: 'binary', minLength: 1, maxLength: 16 }), fc.integer({ min: 1, max: 64 * 1024 }))
  .map(([piece, bytes]) =>
    piece.repeat(Math.max(1, Math.floor(bytes / Math.max(1, Buffer.byteLength(piece))))),
  );

const otherEnv = fc.dictionary(
  fc.stringMatching(/^[A-Z][A-Z0-9_]{0,15}$/).filter((k) => !k.startsWith('CNI_') && k !== 'PATH'),
  fc.string({ unit: 'binary', maxLength: 40 }).map(noNul),
  { maxKeys: 4 },
);

const unknownCniEnv = fc.dictionary(
  fc.stringMatching(/^[A-Z0-9_]{1,12}$/).map((k) => `CNI_FUZZ_${k}`),
  fc.oneof(fc.string({ unit: 'binary', maxLength: 40 }), huge).map(noNul),
  { maxKeys: 3 },
);

/** Valid pairs: a key, '=', any value without ';' (a value may hold '=' and any Unicode). */
const argPairs = fc.array(
  fc.tuple(
    fc.constantFrom('IgnoreUnknown', 'K8S_POD_NAME', 'K8S_POD_INFRA_CONTAINER_ID', 'X', 'a'),
    fc.string({ unit: 'grapheme', maxLength: 30 }).map((v) => noNul(v).replaceAll(';', '')),
  ),
  { maxLength: 4 },
);

export const NOISE: fc.Arbitrary<Mutation> = fc
  .record({
    keys: extraKeys,
    deep: fc.option(deep, { nil: undefined }),
    huge: fc.option(huge, { nil: undefined }),
    env: otherEnv,
    cniEnv: unknownCniEnv,
    args: argPairs,
    trailingSemicolons: fc.boolean(),
    cniPath: fc.option(fc.constantFrom('', ':::', '/nonexistent:/opt/cni/bin', 'é/ü'), { nil: undefined }),
    indent: fc.constantFrom(0, 0, 2, '\t'.length),
  })
  .map((n) => ({
    apply: (d) => {
      Object.assign(d.config, n.keys);
      if (n.deep !== undefined) d.rawValues.set('x-deep', n.deep);
      if (n.huge !== undefined) d.config['x-huge'] = n.huge;
      Object.assign(d.env, n.env, n.cniEnv);
      const pairs = n.args.map(([k, v]) => `${k}=${v}`);
      if (pairs.length > 0)
        d.env.CNI_ARGS = [d.env.CNI_ARGS, ...pairs].filter((p) => p !== undefined).join(';');
      if (n.trailingSemicolons && d.env.CNI_ARGS !== undefined) d.env.CNI_ARGS += ';;';
      if (n.cniPath !== undefined) d.env.CNI_PATH = n.cniPath;
      d.indent = n.indent;
    },
  }));
