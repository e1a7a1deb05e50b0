// The EC2 Query API's form parameters, parsed once into typed values: scalars, numbered lists
// (`PrivateIpAddress.1`), filters (`Filter.1.Name`, `Filter.1.Value.1`) and tag specifications.
import { invalidParameter, missingParameter } from './error.ts';

export type Filters = ReadonlyMap<string, readonly string[]>;

export class QueryParams {
  readonly #form: URLSearchParams;
  #pageItems: number | undefined;

  constructor(body: string) {
    this.#form = new URLSearchParams(body);
  }

  /** The short-pages fault: a Describe* page holds at most `items`, whatever MaxResults asks. */
  limitPages(items: number): void {
    this.#pageItems = items;
  }

  get pageItems(): number | undefined {
    return this.#pageItems;
  }

  get action(): string | undefined {
    return this.get('Action');
  }

  get(name: string): string | undefined {
    return this.#form.get(name) ?? undefined;
  }

  require(name: string): string {
    const v = this.get(name);
    if (v === undefined || v === '') throw missingParameter(name);
    return v;
  }

  int(name: string): number | undefined {
    const v = this.get(name);
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!/^-?\d+$/.test(v) || !Number.isSafeInteger(n))
      throw invalidParameter(`Invalid value '${v}' for ${name}`);
    return n;
  }

  bool(name: string): boolean | undefined {
    const v = this.get(name);
    if (v === undefined) return undefined;
    if (v !== 'true' && v !== 'false') throw invalidParameter(`Invalid value '${v}' for ${name}`);
    return v === 'true';
  }

  /** `${prefix}.1`, `${prefix}.2`, … in index order (gaps allowed, as the SDK never sends them). */
  list(prefix: string): string[] {
    return this.#indexed(prefix)
      .map((i) => this.get(`${prefix}.${i}`))
      .filter((v): v is string => v !== undefined);
  }

  filters(): Filters {
    const out = new Map<string, string[]>();
    for (const i of this.#indexed('Filter')) {
      const name = this.get(`Filter.${i}.Name`);
      if (name === undefined) continue;
      out.set(name, [...(out.get(name) ?? []), ...this.list(`Filter.${i}.Value`)]);
    }
    return out;
  }

  /** Tags of the TagSpecification entries for this resource type (`network-interface`, …). */
  tagSpecifications(resourceType: string): Map<string, string> {
    const tags = new Map<string, string>();
    for (const i of this.#indexed('TagSpecification')) {
      if (this.get(`TagSpecification.${i}.ResourceType`) !== resourceType) continue;
      for (const [k, v] of this.tags(`TagSpecification.${i}.Tag`)) tags.set(k, v);
    }
    return tags;
  }

  /** `${prefix}.N.Key` / `${prefix}.N.Value` pairs. */
  tags(prefix: string): Map<string, string> {
    const tags = new Map<string, string>();
    for (const i of this.#indexed(prefix)) {
      const key = this.get(`${prefix}.${i}.Key`);
      if (key !== undefined) tags.set(key, this.get(`${prefix}.${i}.Value`) ?? '');
    }
    return tags;
  }

  /** `${prefix}.N.Key` with its `${prefix}.N.Value` when one was sent (DeleteTags tells the two apart). */
  tagKeys(prefix: string): Map<string, string | undefined> {
    const tags = new Map<string, string | undefined>();
    for (const i of this.#indexed(prefix)) {
      const key = this.get(`${prefix}.${i}.Key`);
      if (key !== undefined) tags.set(key, this.get(`${prefix}.${i}.Value`));
    }
    return tags;
  }

  /** The distinct N of every `${prefix}.N[.…]` key, ascending. */
  #indexed(prefix: string): number[] {
    const found = new Set<number>();
    const head = `${prefix}.`;
    for (const key of this.#form.keys()) {
      if (!key.startsWith(head)) continue;
      const n = Number(key.slice(head.length).split('.')[0]);
      if (Number.isInteger(n) && n > 0) found.add(n);
    }
    return [...found].sort((a, b) => a - b);
  }
}
