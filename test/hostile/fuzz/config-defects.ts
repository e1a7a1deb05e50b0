// Defects of the network configuration on stdin, each with the code the spec gives it: 6 (failed
// to decode) for text that is not a JSON object, 1 (incompatible version) for a missing,
// unsupported or too old cniVersion, 7 (invalid network configuration) for a key of the wrong type
// or value. agentSocket and delSpoolDir are never touched: a request must reach the agent.
import fc from 'fast-check';
import type { Defect, Draft, FuzzCommand, Mutation } from './draft.ts';
import type { DefectKind } from './env-defects.ts';

const ALL_COMMANDS: readonly FuzzCommand[] = ['ADD', 'DEL', 'CHECK', 'GC', 'STATUS'];
const SUPPORTED = ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'];

function mutation(defect: Defect, apply: (d: Draft) => void): Mutation {
  return {
    apply: (d) => {
      apply(d);
      d.defects.push(defect);
    },
  };
}

/** Sets a config key to `value` (undefined: removes it). */
function setKey(key: string, value: unknown, code: number, mentions: RegExp): Mutation {
  const label = `config.${key} ${value === undefined ? 'missing' : JSON.stringify(value)?.slice(0, 60)}`;
  return mutation({ label, code, mentions }, (d) => {
    if (value === undefined) delete d.config[key];
    else d.config[key] = value;
  });
}

const keyDefect = (
  key: string,
  code: number,
  mentions: RegExp,
  values: fc.Arbitrary<unknown>,
): DefectKind => ({
  appliesTo: ALL_COMMANDS,
  arb: () => values.map((v) => setKey(key, v, code, mentions)),
});

/** Ways to turn the rendered config into text that is not JSON. */
const corruption: fc.Arbitrary<[string, (text: string) => string]> = fc.oneof(
  fc
    .integer({ min: 1, max: 10_000 })
    .map((k): [string, (t: string) => string] => [
      `cut at ${k}`,
      (t) => t.slice(0, Math.min(k, t.length - 1)),
    ]),
  fc
    .constantFrom('x', ',', '}', ']', '{}', '\u0000', 'null', ' 1', '"')
    .map((g): [string, (t: string) => string] => [`trailing ${JSON.stringify(g)}`, (t) => `${t}${g}`]),
  fc
    .constantFrom('x', '\ufeff', ']', "'", '\u0000')
    .map((g): [string, (t: string) => string] => [`leading ${JSON.stringify(g)}`, (t) => `${g}${t}`]),
  // Inside a string: a raw control character, a bad escape, a cut \u escape, an escaped closing quote.
  fc
    .constantFrom('\u0000', '\u0001', '\n', '\t', '\u001f', '\\x', '\\u12', '\\U0041', '\\')
    .map((g): [string, (t: string) => string] => [
      `${JSON.stringify(g)} in a string`,
      (t) => t.replace('"x-pad":"pad', `"x-pad":"pad${g}`).replace('"x-pad": "pad', `"x-pad": "pad${g}`),
    ]),
  fc.constantFrom(
    ['NaN', (t: string) => t.replace('{', '{"x-nan":NaN,')] as [string, (t: string) => string],
    ['a comment', (t: string) => t.replace('{', '{/* c */')] as [string, (t: string) => string],
    ['single quotes', (t: string) => t.replace('"x-pad"', "'x-pad'")] as [string, (t: string) => string],
    ['a bare key', (t: string) => t.replace('"x-pad"', 'xpad')] as [string, (t: string) => string],
    ['a trailing comma', (t: string) => t.replace(/}\s*$/, ',}')] as [string, (t: string) => string],
    ['hex', (t: string) => t.replace('{', '{"x-hex":0x10,')] as [string, (t: string) => string],
    ['a leading zero', (t: string) => t.replace('{', '{"x-num":01,')] as [string, (t: string) => string],
  ),
);

const nonString = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true }),
  fc.boolean(),
  fc.constant(null),
  fc.constant([]),
  fc.constant({}),
);

export const CONFIG_DEFECTS: readonly DefectKind[] = [
  {
    appliesTo: ALL_COMMANDS,
    arb: () =>
      corruption.map(([label, corrupt]) =>
        mutation({ label: `stdin not JSON: ${label}`, code: 6 }, (d) => {
          d.corrupt = corrupt;
        }),
      ),
  },
  {
    appliesTo: ALL_COMMANDS,
    arb: () =>
      fc
        .constantFrom('', ' \n', '[]', '[{"cniVersion":"1.0.0"}]', '"vpcnet"', '1', 'null', 'true', '{}[]')
        .map((s) =>
          mutation({ label: `stdin ${JSON.stringify(s)}`, code: 6 }, (d) => {
            d.wholeStdin = s;
          }),
        ),
  },
  keyDefect('cniVersion', 1, /cniVersion/, fc.constantFrom(undefined, '')),
  keyDefect('cniVersion', 7, /cniVersion/, nonString),
  keyDefect(
    'cniVersion',
    1,
    /CNI version/,
    fc.oneof(
      fc.constantFrom(
        '0.1.0',
        '0.2.0',
        '1.2.0',
        '2.0.0',
        '1.0',
        '1',
        'v1.0.0',
        ' 1.0.0',
        '1.0.0 ',
        '1.0.0-rc1',
        '١.٠.٠',
      ),
      fc.string({ minLength: 1, maxLength: 20 }).filter((v) => !SUPPORTED.includes(v)),
    ),
  ),
  {
    appliesTo: ['CHECK', 'GC', 'STATUS'],
    arb: () =>
      fc.constantFrom('0.3.0', '0.3.1', '0.4.0', '1.0.0').chain((v) =>
        fc.constant(
          mutation({ label: `cniVersion ${v} too old`, code: 1, mentions: /does not allow/ }, (d) => {
            // CHECK came in 0.4.0, GC and STATUS in 1.1.0.
            if (d.command === 'CHECK' && v !== '0.3.0' && v !== '0.3.1') d.config.cniVersion = '0.3.1';
            else d.config.cniVersion = v;
          }),
        ),
      ),
  },
  keyDefect(
    'name',
    7,
    /name/,
    fc.oneof(
      fc.constantFrom(undefined, '', '-x', '.x', 'a b', 'é', 'a/b', 'a;b', '\u0000'),
      nonString,
      fc.string({ maxLength: 20 }).map((s) => `${s}/`),
    ),
  ),
  keyDefect('type', 7, /type/, fc.oneof(fc.constantFrom(undefined, ''), nonString)),
  keyDefect(
    'mtu',
    7,
    /mtu/,
    fc.oneof(
      fc.constantFrom(1.5, '1500', true, null, 0, 67, 65536, -1, 1e20, [1500]),
      fc.integer({ min: 65536 }),
      fc.integer({ max: 67 }),
    ),
  ),
  keyDefect(
    'vethPrefix',
    7,
    /vethPrefix/,
    fc.oneof(
      fc.constantFrom('', 'toolong', 'eth', 'lo', 'vlan', 'a-b', 'é', 'a b', 1, null, ['v']),
      fc.stringMatching(/^[a-z]{5,30}$/),
    ),
  ),
  keyDefect(
    'podSGEnforcingMode',
    7,
    /podSGEnforcingMode/,
    fc.constantFrom('STRICT', 'loose', '', 1, null, {}),
  ),
  keyDefect(
    'prevResult',
    7,
    /prevResult/,
    fc.constantFrom(
      'x',
      [],
      1,
      null,
      { interfaces: {} },
      { interfaces: [{}] },
      { ips: 'x' },
      { ips: [{}] },
      { ips: [{ address: 1 }] },
      { ips: [{ address: '10.0.0.9/32', interface: 5 }] },
      { routes: [{}] },
      { dns: { nameservers: [1] } },
      { ip4: 'x' },
    ),
  ),
  keyDefect('runtimeConfig', 7, /runtimeConfig/, fc.constantFrom('x', [], 1, null, true)),
  {
    // Without a readable list of what the runtime still uses, GC must remove nothing.
    appliesTo: ['GC'],
    arb: () =>
      fc
        .constantFrom(
          undefined,
          'x',
          {},
          [1],
          [{}],
          [{ containerID: 'a' }],
          [{ containerID: 1, ifname: 'eth0' }],
          null,
        )
        .map((v) => setKey('cni.dev/valid-attachments', v, 7, /attachments/)),
  },
];
