// The AWS shared config and credentials files (`~/.aws/config`, `~/.aws/credentials`, or
// AWS_CONFIG_FILE and AWS_SHARED_CREDENTIALS_FILE), read as the AWS SDKs read them: INI sections of
// `key = value` lines, `#` and `;` comment lines, indented lines continuing a key (a nested block,
// e.g. `s3 =` settings, which no credential uses and is skipped). A profile NAME is the section
// `[NAME]` of the credentials file and `[profile NAME]` of the config file (`[default]` there too);
// where both set a key, the credentials file wins.

/** One profile's settings, keys lower-cased. */
export type ProfileSettings = ReadonlyMap<string, string>;

/** The sections of one file, by section name as written (`profile x`, `default`, …). */
export function parseIniSections(text: string): Map<string, Map<string, string>> {
  const sections = new Map<string, Map<string, string>>();
  let current: Map<string, string> | undefined;
  let nested = false;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/\s+$/, '');
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#') || trimmed.startsWith(';')) continue;
    const header = /^\[\s*([^\]]*?)\s*\]\s*(?:[#;].*)?$/.exec(trimmed);
    if (header !== null) {
      const name = (header[1] ?? '').replace(/\s+/g, ' ');
      current = sections.get(name) ?? new Map();
      sections.set(name, current);
      nested = false;
      continue;
    }
    // A line indented under a key with no value of its own belongs to that key's nested block.
    if (nested && /^\s/.test(line)) continue;
    const eq = trimmed.indexOf('=');
    if (current === undefined || eq < 1) continue;
    const key = trimmed.slice(0, eq).trim().toLowerCase();
    const value = trimmed
      .slice(eq + 1)
      .replace(/\s+[#;].*$/, '')
      .trim();
    nested = value === '';
    if (!nested) current.set(key, value);
  }
  return sections;
}

/** Where the files are: AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE, else under `home`/.aws. */
export function sharedFilePaths(
  env: NodeJS.ProcessEnv,
  home: string,
): { credentials: string; config: string } {
  const given = (v: string | undefined) => (v?.trim() ? v.trim() : undefined);
  return {
    credentials: given(env.AWS_SHARED_CREDENTIALS_FILE) ?? `${home}/.aws/credentials`,
    config: given(env.AWS_CONFIG_FILE) ?? `${home}/.aws/config`,
  };
}

/**
 * Profile `name` from the two files' texts (undefined when a file is absent), or undefined when
 * neither has it. The credentials file's keys win over the config file's.
 */
export function profileFromFiles(
  name: string,
  files: { readonly credentials: string | undefined; readonly config: string | undefined },
): ProfileSettings | undefined {
  const fromCredentials = parseIniSections(files.credentials ?? '').get(name);
  const configSections = parseIniSections(files.config ?? '');
  const fromConfig =
    configSections.get(`profile ${name}`) ?? (name === 'default' ? configSections.get('default') : undefined);
  if (fromCredentials === undefined && fromConfig === undefined) return undefined;
  return new Map([...(fromConfig ?? []), ...(fromCredentials ?? [])]);
}
