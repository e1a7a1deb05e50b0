// EC2 Describe* filters: within one filter the values are ORed, filters are ANDed; values may
// use the wildcards * and ?. Tags filter as `tag:KEY`, `tag-key` and `tag-value`.
import { invalidParameter } from './error.ts';
import type { Filters } from './params.ts';

export type FilterSchema<T> = Readonly<Record<string, (item: T) => readonly string[]>>;

/** `*` any run of characters, `?` any one; `flags` as RegExp's (IAM's actions match case-insensitively). */
export function wildcard(pattern: string, flags = 's'): RegExp {
  const body = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`, flags);
}

function fieldValues<T>(
  item: T,
  name: string,
  schema: FilterSchema<T>,
  tagsOf: (item: T) => ReadonlyMap<string, string>,
): readonly string[] {
  if (name.startsWith('tag:')) {
    const v = tagsOf(item).get(name.slice(4));
    return v === undefined ? [] : [v];
  }
  if (name === 'tag-key') return [...tagsOf(item).keys()];
  if (name === 'tag-value') return [...tagsOf(item).values()];
  const field = schema[name];
  return field === undefined ? [] : field(item);
}

export function applyFilters<T>(
  items: readonly T[],
  filters: Filters,
  schema: FilterSchema<T>,
  tagsOf: (item: T) => ReadonlyMap<string, string>,
): T[] {
  for (const name of filters.keys()) {
    const known = name.startsWith('tag:') || name === 'tag-key' || name === 'tag-value' || name in schema;
    if (!known) throw invalidParameter(`The filter '${name}' is invalid`);
  }
  const compiled = [...filters].map(([name, values]) => ({ name, patterns: values.map((v) => wildcard(v)) }));
  return items.filter((item) =>
    compiled.every(({ name, patterns }) => {
      const have = fieldValues(item, name, schema, tagsOf);
      return have.some((v) => patterns.some((p) => p.test(v)));
    }),
  );
}
