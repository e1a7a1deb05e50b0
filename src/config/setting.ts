// One configuration setting as declared in the table (settings.ts), and how its value is read
// from the environment. The docs (README table, vpcnetd --help) render from the same fields.
import { ConfigError } from './config-error.ts';
import type { ValueKind } from './value-kinds.ts';

export type Env = Readonly<Record<string, string | undefined>>;

/** A variable the docs list: the settings vpcnetd parses and those another part reads. */
export interface DocumentedVariable {
  readonly env: string;
  /** The default as the docs show it. */
  readonly defaultText: string;
  /** One line: what the variable does. */
  readonly description: string;
  /** The upstream's (aws-vpc-cni) name, with the upstream's meaning: users can switch over. */
  readonly upstream: boolean;
}

export interface Setting<T> extends DocumentedVariable {
  readonly kind: ValueKind<NonNullable<T>>;
  /** The value when the variable is unset, empty or blank. */
  readonly fallback: T;
}

interface SettingSpec<T> {
  readonly env: string;
  readonly kind: ValueKind<T>;
  readonly description: string;
  readonly upstream?: boolean;
}

/** A setting with a default value; the docs show it as written unless `defaultText` says otherwise. */
export function withDefault<T extends string | number | boolean>(
  spec: SettingSpec<T> & { readonly default: NoInfer<T>; readonly defaultText?: string },
): Setting<T> {
  const { default: fallback, defaultText, upstream, ...rest } = spec;
  return { ...rest, upstream: upstream ?? false, fallback, defaultText: defaultText ?? String(fallback) };
}

/** A setting that is undefined unless given; `defaultText` says what that means ("unset", "hostname"). */
export function unsetByDefault<T extends string | number | boolean>(
  spec: SettingSpec<T> & { readonly defaultText: string },
): Setting<T | undefined> {
  const { upstream, kind, ...rest } = spec;
  return {
    ...rest,
    kind: kind as ValueKind<NonNullable<T | undefined>>,
    upstream: upstream ?? false,
    fallback: undefined,
  };
}

/** Reads one setting; a blank value counts as unset. Throws ConfigError naming the variable. */
export function readSetting<T>(setting: Setting<T>, env: Env): T {
  const raw = env[setting.env];
  if (raw === undefined || raw.trim() === '') return setting.fallback;
  const value = setting.kind.parse(raw);
  if (value === undefined) throw new ConfigError(`${setting.env} must be ${setting.kind.what}, got '${raw}'`);
  return value;
}

export type SettingValues<S> = { readonly [K in keyof S]: S[K] extends Setting<infer T> ? T : never };

/** Reads every setting of a table, keyed as the table is. */
export function readSettings<S extends Readonly<Record<string, Setting<unknown>>>>(
  settings: S,
  env: Env,
): SettingValues<S> {
  const values: Record<string, unknown> = {};
  for (const [key, setting] of Object.entries(settings)) values[key] = readSetting(setting, env);
  return values as SettingValues<S>;
}
