/**
 * The kinds of command-line option and what each value becomes. A command declares its options
 * once (commands.ts), one line each: the parser (command-line.ts) refuses any other option, and a
 * value of the wrong kind is refused here naming the flag and the rule, before anything is opened.
 * Values whose rules are the admin API's (money, dates, names) pass on as text, and its
 * validation names the field.
 */

/** A command line the CLI cannot run: one line naming what is wrong; nothing was opened. */
export class UsageError extends Error {}

export interface Option {
  /** parseArgs' type: a bare flag, or an option written `--name VALUE` or `--name=VALUE`. */
  type: "boolean" | "string";
  /** The value as usage lines show it: "USD", "N|default", "true|false". */
  value?: string;
  /** Where the value goes in the admin API's request body, a dotted path ("pricing.input_per_million"). */
  field?: string;
  /** The value as the command uses it; throws UsageError saying the rule (the caller names the flag). */
  convert?: (text: string) => unknown;
}

export type Options = Record<string, Option>;

/** A bare flag: `--json`. */
export const flag = (): Option => ({ type: "boolean" });

/** Any text, passed on as given: `--name NAME`. */
export const text = (value: string, field?: string): Option => ({ type: "string", value, field });

function trueOrFalse(t: string): boolean {
  if (t === "true") return true;
  if (t === "false") return false;
  throw new UsageError(`must be true or false, got '${t}'`);
}

/** `--disabled true|false`. */
export const trueFalse = (field?: string): Option => ({ type: "string", value: "true|false", field, convert: trueOrFalse });

/** `true|false` read as something else: `--image true` is the input modalities ["text", "image"]. */
export function trueFalseAs(field: string, as: (on: boolean) => unknown): Option {
  return { type: "string", value: "true|false", field, convert: (t) => as(trueOrFalse(t)) };
}

/**
 * A whole number (`--context-window N`); with `none`, that word also, meaning no value (null):
 * `--rate-limit-rpm N|default`. Its range is the admin API's rule, which names the field.
 */
export function whole(field?: string, none?: string): Option {
  return {
    type: "string",
    value: none === undefined ? "N" : `N|${none}`,
    field,
    convert: (t) => {
      if (none !== undefined && t === none) return null;
      if (/^-?\d+$/.test(t)) return Number(t);
      throw new UsageError(`must be a whole number${none === undefined ? "" : ` or '${none}'`}, got '${t}'`);
    },
  };
}

/** A decimal number: `--weight N`. */
export const decimal = (field?: string): Option => ({
  type: "string",
  value: "N",
  field,
  convert: (t) => {
    if (/^-?\d+(\.\d+)?$/.test(t)) return Number(t);
    throw new UsageError(`must be a number, got '${t}'`);
  },
});

/** Text, or a word meaning no value (null): `--limit USD|none`. */
export const textOrNone = (value: string, none: string, field?: string): Option => ({
  type: "string",
  value: `${value}|${none}`,
  field,
  convert: (t) => (t === none ? null : t),
});

/** A comma-separated list, or a word meaning no list (null): `--models ID,ID,...|all`. */
export const listOrNone = (value: string, none: string, field?: string): Option => ({
  type: "string",
  value: `${value}|${none}`,
  field,
  convert: (t) => (t === none ? null : t.split(",").map((v) => v.trim()).filter(Boolean)),
});

/** One of a few words: `--provider cpu|cuda`. */
export const oneOf = (words: string[], field?: string): Option => ({
  type: "string",
  value: words.join("|"),
  field,
  convert: (t) => {
    if (words.includes(t)) return t;
    throw new UsageError(`must be ${words.slice(0, -1).join(", ")} or ${words.at(-1)}, got '${t}'`);
  },
});

/** The admin API request body the given options fill: each value at its option's field. */
export function fieldsOf(options: Options, values: Record<string, unknown>): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [name, option] of Object.entries(options)) {
    if (option.field === undefined || values[name] === undefined) continue;
    const path = option.field.split(".");
    let at = body;
    for (const key of path.slice(0, -1)) at = (at[key] ??= {}) as Record<string, unknown>;
    at[path.at(-1)!] = values[name];
  }
  return body;
}
