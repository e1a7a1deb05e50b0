// Defects of the CNI_* environment, each with the code the spec gives it: 4 (invalid environment
// variables) for a missing or malformed variable, 3 (unknown container) for a netns that does not
// exist or a CHECK of an attachment that does not. GC and STATUS read only CNI_COMMAND.
import fc from 'fast-check';
import type { Defect, Draft, FuzzCommand, FuzzTarget, Mutation } from './draft.ts';

export interface DefectKind {
  readonly appliesTo: readonly FuzzCommand[];
  readonly arb: (t: FuzzTarget) => fc.Arbitrary<Mutation>;
}

const ATTACHMENT_COMMANDS: readonly FuzzCommand[] = ['ADD', 'DEL', 'CHECK'];
const ALL_COMMANDS: readonly FuzzCommand[] = ['ADD', 'DEL', 'CHECK', 'GC', 'STATUS'];
const KNOWN_COMMANDS = ['ADD', 'DEL', 'CHECK', 'VERSION', 'GC', 'STATUS'];

/** Sets (or, with undefined, unsets) one variable, recording the defect. */
function setEnv(name: string, value: string | undefined, defect: Defect): Mutation {
  return {
    apply: (d: Draft) => {
      d.env[name] = value;
      d.defects.push(defect);
    },
  };
}

/** Environment values cannot hold a NUL. */
const envText = (opts: fc.StringConstraints = {}) =>
  fc.string({ unit: 'grapheme', ...opts }).map((s) => s.replaceAll('\u0000', ''));

/** A string that is not a container ID (^[a-zA-Z0-9][a-zA-Z0-9_.-]*$), built to be one of its failures. */
const badContainerId = fc.oneof(
  fc.constantFrom(
    '',
    '-leading-dash',
    '.hidden',
    '_x',
    'a/b',
    '../../etc',
    'a b',
    'a;b',
    'tab\there',
    'é',
    '東京',
    'a:b',
  ),
  fc
    .tuple(
      envText({ maxLength: 30 }),
      fc.constantFrom('/', ' ', ';', '\n', '$', 'é', '\u2028', '*'),
      envText({ maxLength: 30 }),
    )
    .map(([a, bad, b]) => `x${a}${bad}${b}`),
  fc.integer({ min: 1000, max: 60_000 }).map((n) => `${'a'.repeat(n)}/`),
);

/** A string that is no interface name: empty, over 15 characters, '.', '..', or holding '/', ':' or a space. */
const badIfName = fc.oneof(
  fc.constantFrom('', '.', '..', 'eth/0', 'eth:0', 'eth 0', 'eth0\n', '\teth0', 'a'.repeat(16)),
  fc
    .tuple(fc.stringMatching(/^[a-z0-9]{0,6}$/), fc.constantFrom('/', ':', ' ', '\t', '\n'))
    .map(([a, bad]) => `${a}${bad}x`),
  fc.integer({ min: 16, max: 5000 }).map((n) => 'e'.repeat(n)),
);

/** A CNI_ARGS value with a pair that is no KEY=VALUE (no '=', or nothing before it). */
const badCniArgs = fc
  .tuple(
    fc.array(fc.tuple(fc.stringMatching(/^[A-Za-z_]{1,12}$/), envText({ maxLength: 20 })), { maxLength: 3 }),
    fc.oneof(
      fc.stringMatching(/^[A-Za-z0-9_]{1,12}$/),
      envText({ maxLength: 12 }).map((v) => `=${v}`),
    ),
  )
  .map(([pairs, bad]) =>
    [...pairs.map(([k, v]) => `${k}=${v.replaceAll(';', '')}`), bad.replaceAll(';', '')].join(';'),
  );

const garbledCommand = fc
  .oneof(
    fc.constantFrom(
      '',
      'add',
      'Add',
      'ADD ',
      ' DEL',
      'ADDD',
      'CHECKS',
      'VERSIONS',
      'GC\t',
      'STATUS\n',
      'ΑDD',
      'ＡＤＤ',
    ),
    fc.constantFrom('DEL;ADD', 'ADD=1', 'del', 'ADD\u200b'),
    envText({ maxLength: 12 }),
  )
  .filter((c) => !KNOWN_COMMANDS.includes(c));

export const ENV_DEFECTS: readonly DefectKind[] = [
  {
    appliesTo: ALL_COMMANDS,
    arb: () =>
      fc.oneof(
        fc.constant(
          setEnv('CNI_COMMAND', undefined, { label: 'no CNI_COMMAND', code: 4, mentions: /CNI_COMMAND/ }),
        ),
        garbledCommand.map((c) =>
          setEnv('CNI_COMMAND', c, {
            label: `CNI_COMMAND ${JSON.stringify(c)}`,
            code: 4,
            mentions: /CNI_COMMAND/,
          }),
        ),
      ),
  },
  {
    appliesTo: ATTACHMENT_COMMANDS,
    arb: () =>
      fc.oneof(
        fc.constant(
          setEnv('CNI_CONTAINERID', undefined, {
            label: 'no CNI_CONTAINERID',
            code: 4,
            mentions: /CNI_CONTAINERID/,
          }),
        ),
        badContainerId.map((id) =>
          setEnv('CNI_CONTAINERID', id, {
            label: `CNI_CONTAINERID ${JSON.stringify(id.slice(0, 40))}`,
            code: 4,
            mentions: /CNI_CONTAINERID/,
          }),
        ),
      ),
  },
  {
    appliesTo: ATTACHMENT_COMMANDS,
    arb: () =>
      fc.oneof(
        fc.constant(
          setEnv('CNI_IFNAME', undefined, { label: 'no CNI_IFNAME', code: 4, mentions: /CNI_IFNAME/ }),
        ),
        badIfName.map((n) =>
          setEnv('CNI_IFNAME', n, {
            label: `CNI_IFNAME ${JSON.stringify(n.slice(0, 40))}`,
            code: 4,
            mentions: /CNI_IFNAME/,
          }),
        ),
      ),
  },
  {
    appliesTo: ['ADD', 'CHECK'],
    arb: () =>
      fc
        .constantFrom(undefined, '')
        .map((v) =>
          setEnv('CNI_NETNS', v, { label: `CNI_NETNS ${JSON.stringify(v)}`, code: 4, mentions: /CNI_NETNS/ }),
        ),
  },
  {
    appliesTo: ATTACHMENT_COMMANDS,
    arb: () =>
      badCniArgs.map((a) =>
        setEnv('CNI_ARGS', a, {
          label: `CNI_ARGS ${JSON.stringify(a.slice(0, 60))}`,
          code: 4,
          mentions: /CNI_ARGS/,
        }),
      ),
  },
  {
    // Checked once everything parsed: an ADD into a namespace that is not there.
    appliesTo: ['ADD'],
    arb: (t) =>
      fc
        .constantFrom(t.absentNetns, `${t.absentNetns}/../../x`, '/proc/0/ns/net', 'relative/netns')
        .map((p) =>
          setEnv('CNI_NETNS', p, { label: `CNI_NETNS ${p} absent`, code: 3, mentions: /namespace/ }),
        ),
  },
  {
    // A CHECK of an attachment the ledger does not have.
    appliesTo: ['CHECK'],
    arb: () =>
      fc
        .stringMatching(/^[a-f0-9]{12,64}$/)
        .map((id) =>
          setEnv('CNI_CONTAINERID', `unknown${id}`, { label: 'CHECK of an unknown container', code: 3 }),
        ),
  },
];
