// The kinds of value a setting may hold: each knows how to read the variable's text and how to
// say what a valid value is (the same words serve the error message and the docs).

export interface ValueKind<T> {
  /** What a valid value is, completing "X must be …": "a positive integer". */
  readonly what: string;
  /** The value `text` stands for, or undefined when it is not a valid one. `text` is never blank. */
  parse(text: string): T | undefined;
}

/** Digits only, as a safe integer. Surrounding whitespace is allowed (manifests carry it). */
function wholeNumber(text: string): number | undefined {
  const trimmed = text.trim();
  if (!/^\d+$/.test(trimmed)) return undefined;
  const value = Number(trimmed);
  return Number.isSafeInteger(value) ? value : undefined;
}

export const positiveInt: ValueKind<number> = {
  what: 'a positive integer',
  parse: (text) => {
    const value = wholeNumber(text);
    return value !== undefined && value > 0 ? value : undefined;
  },
};

export const nonNegativeInt: ValueKind<number> = { what: 'a non-negative integer', parse: wholeNumber };

/** A decimal number above zero, fractions allowed ("0.05", "2"); no exponents or signs. */
export const positiveNumber: ValueKind<number> = {
  what: 'a positive number',
  parse: (text) => {
    const trimmed = text.trim();
    if (!/^(\d+(\.\d*)?|\.\d+)$/.test(trimmed)) return undefined;
    const value = Number(trimmed);
    return Number.isFinite(value) && value > 0 ? value : undefined;
  },
};

export function intBetween(min: number, max: number): ValueKind<number> {
  return {
    what: `an integer between ${min} and ${max}`,
    parse: (text) => {
      const value = wholeNumber(text);
      return value !== undefined && value >= min && value <= max ? value : undefined;
    },
  };
}

/** Exactly `true` or `false`, as the upstream's manifests write them. */
export const trueOrFalse: ValueKind<boolean> = {
  what: 'true or false',
  parse: (text) => (text === 'true' ? true : text === 'false' ? false : undefined),
};

/** `true` or `false` in any case (`TRUE`, `False`), as the AWS SDKs read their own switches. */
export const trueOrFalseAnyCase: ValueKind<boolean> = {
  what: 'true or false',
  parse: (text) => {
    const word = text.trim().toLowerCase();
    return word === 'true' ? true : word === 'false' ? false : undefined;
  },
};

/** `false` only: a switch whose `true` vpcnet cannot honour yet, refused rather than ignored. */
export function falseOnly(reason: string): ValueKind<false> {
  return { what: `false (${reason})`, parse: (text) => (text === 'false' ? false : undefined) };
}

/** One of a fixed set of words: "debug, info, warn or error". */
export function oneOf<const V extends string>(values: readonly [V, ...V[]]): ValueKind<V> {
  const words = values.length === 1 ? values[0] : `${values.slice(0, -1).join(', ')} or ${values.at(-1)}`;
  return {
    what: words,
    parse: (text) => values.find((v) => v === text),
  };
}

/** An http or https URL, returned without trailing slashes (paths are appended to it). */
export const httpUrl: ValueKind<string> = {
  what: 'an http(s) URL',
  parse: (text) => (/^https?:\/\//.test(text) && URL.canParse(text) ? text.replace(/\/+$/, '') : undefined),
};

/** Text the agent uses as it is: a file system path, a host name. */
export function text(what: string): ValueKind<string> {
  return { what, parse: (value) => value };
}

/** Text that must match `pattern`; `what` says the rule in words. */
export function matching(pattern: RegExp, what: string): ValueKind<string> {
  return { what, parse: (value) => (pattern.test(value) ? value : undefined) };
}

/** A non-zero 32-bit mark, in hex (`0x80`) or decimal (`128`), as upstream reads its CONNMARK. */
export const markBits: ValueKind<number> = {
  what: 'a non-zero 32-bit value, hex (0x80) or decimal',
  parse: (text) => {
    const trimmed = text.trim();
    if (!/^(0[xX][0-9a-fA-F]{1,8}|\d{1,10})$/.test(trimmed)) return undefined;
    const value = Number(trimmed);
    return value > 0 && value <= 0xffffffff ? value : undefined;
  },
};
