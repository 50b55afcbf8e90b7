/**
 * The command line, parsed strictly (node:util parseArgs, strict): the command's words first,
 * then its arguments and options in any order. An option the command does not take, one without
 * its value, a value given to a bare flag, an option given twice, a malformed value, a missing or
 * an extra argument: each is one line naming it, found before configuration is read or any store
 * opened, so nothing is created or changed (docs/operate.md "Accounts, keys and credits").
 */
import { parseArgs } from "node:util";
import { COMMANDS, type CommandSpec } from "./commands";
import { fieldsOf, UsageError, type Options } from "./options";

export interface ParsedCommand {
  spec: CommandSpec;
  /** The command words joined: "accounts create". */
  name: string;
  /** The positional arguments after the words. */
  args: string[];
  /** The options given, by name, converted by their kind (options.ts). */
  options: Record<string, unknown>;
  /** The admin API request body those options fill. */
  fields: Record<string, unknown>;
}

export type CommandLine =
  | { kind: "run"; command: ParsedCommand }
  /** Help for one command, or (spec null) the whole help. */
  | { kind: "help"; spec: CommandSpec | null }
  | { kind: "error"; message: string };

const HELP_FLAGS = new Set(["--help", "-h"]);

/** "-3", "-0.5": a value (an invalid one for every option we have), never an option. */
const NEGATIVE_NUMBER = /^-\.?\d/;

export function parseCommandLine(argv: string[]): CommandLine {
  const first = argv[0];
  if (first === "help" || (first !== undefined && HELP_FLAGS.has(first))) return { kind: "help", spec: null };
  const words = argv.length === 0 ? ["serve"] : first === "--version" || first === "-v" ? ["version", ...argv.slice(1)] : argv;
  if (words[0]!.startsWith("-")) return { kind: "error", message: `unknown option '${words[0]}' (before a command only --help and --version). Run 'switchyard --help'.` };
  const spec = COMMANDS.find((c) => c.words.every((w, i) => words[i] === w));
  if (!spec) {
    if (words.some((w) => HELP_FLAGS.has(w))) return { kind: "help", spec: null };
    const group = COMMANDS.filter((c) => c.words.length > 1 && c.words[0] === words[0]);
    const shown = words.slice(0, group.length > 0 ? 2 : 1).join(" ");
    const hint = group.length > 0 ? ` (${words[0]}: ${group.map((c) => c.words[1]).join(", ")})` : "";
    return { kind: "error", message: `unknown command '${shown}'${hint}. Run 'switchyard --help'.` };
  }
  const rest = words.slice(spec.words.length);
  if (rest.some((w) => HELP_FLAGS.has(w))) return { kind: "help", spec };
  try {
    return { kind: "run", command: parseCommand(spec, rest) };
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    const name = spec.words.join(" ");
    return { kind: "error", message: `${name}: ${e.message} Run 'switchyard ${name} --help'.` };
  }
}

/** The options as parseArgs declares them. */
function parseArgsOptions(options: Options): Record<string, { type: "boolean" | "string" }> {
  return Object.fromEntries(Object.entries(options).map(([name, o]) => [name, { type: o.type }]));
}

function parseCommand(spec: CommandSpec, rest: string[]): ParsedCommand {
  // parseArgs would read a negative number as a short option ("-3"), refusing `credits add ID -5`
  // and `--rate-limit-rpm -3` before the rule they break can be named. Each one is swapped for a
  // stand-in no argument can be (an argv string cannot hold a NUL byte) and put back after.
  const args = rest.map((a, i) => (NEGATIVE_NUMBER.test(a) ? `\0${i}` : a));
  const back = (v: unknown) => (typeof v === "string" && v.startsWith("\0") ? rest[Number(v.slice(1))]! : v);
  const parsed = strictParse(args, spec.options);
  const seen = new Set<string>();
  for (const t of parsed.tokens) {
    if (t.kind !== "option") continue;
    if (seen.has(t.name)) throw new UsageError(`--${t.name} is given twice.`);
    seen.add(t.name);
  }
  const positionals = parsed.positionals.map((p) => back(p) as string);
  for (const [i, arg] of spec.args.entries()) {
    if (positionals[i] === undefined || positionals[i] === "") throw new UsageError(`missing ${arg}.`);
  }
  if (positionals.length > spec.args.length && spec.more === undefined) throw new UsageError(`unexpected argument '${positionals[spec.args.length]}'.`);
  const options: Record<string, unknown> = {};
  for (const [name, raw] of Object.entries(parsed.values)) {
    const value = back(raw);
    const convert = spec.options[name]?.convert;
    try {
      options[name] = typeof value === "string" && convert ? convert(value) : value;
    } catch (e) {
      if (e instanceof UsageError) throw new UsageError(`--${name} ${e.message}.`);
      throw e;
    }
  }
  return { spec, name: spec.words.join(" "), args: positionals, options, fields: fieldsOf(spec.options, options) };
}

function strictParse(args: string[], options: Options) {
  try {
    return parseArgs({ args, options: parseArgsOptions(options), strict: true, allowPositionals: true, tokens: true });
  } catch (e) {
    throw new UsageError(explain(e, args, options));
  }
}

/** Why strict parsing refused `args`, in one line naming the option, from parseArgs' own tokens. */
function explain(error: unknown, args: string[], options: Options): string {
  const { tokens } = parseArgs({ args, options: parseArgsOptions(options), strict: false, allowPositionals: true, tokens: true });
  for (const t of tokens) {
    if (t.kind !== "option") continue;
    const option = options[t.name];
    if (option === undefined) {
      const names = Object.keys(options).map((n) => `--${n}`);
      return `unknown option '${t.rawName}' (${names.length > 0 ? `it takes ${names.join(", ")}` : "it takes none"}).`;
    }
    if (option.type === "boolean" && t.value !== undefined) return `${t.rawName} takes no value.`;
    if (option.type === "string" && (t.value === undefined || (!t.inlineValue && t.value.startsWith("-")))) {
      // `--reason -x` is ambiguous (a forgotten value, or one starting with '-'); `--reason=-x` is not.
      const dashed = t.value !== undefined && t.value !== "--" && options[t.value.replace(/^-+/, "")] === undefined;
      return `${t.rawName} needs a value (${option.value})${dashed ? `; write ${t.rawName}=${t.value} for one that starts with '-'` : ""}.`;
    }
  }
  return String((error as Error).message).split("\n")[0]!;
}
