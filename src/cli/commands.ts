/**
 * The commands the CLI knows and the words each one needs, checked before anything is opened:
 * an unknown command or a missing argument creates no data directory and touches no database.
 */
export interface CommandSpec {
  /** The command words, e.g. ["accounts", "create"]. */
  words: string[];
  /** Positional arguments after the words, by name, all required. */
  args: string[];
}

export const COMMANDS: CommandSpec[] = [
  { words: ["serve"], args: [] },
  { words: ["demo"], args: [] },
  { words: ["version"], args: [] },
  { words: ["doctor"], args: [] },
  { words: ["healthcheck"], args: [] },
  { words: ["migrate"], args: [] },
  { words: ["models", "pull"], args: [] },
  { words: ["models", "list"], args: [] },
  { words: ["runtime", "list"], args: [] },
  { words: ["runtime", "pull"], args: ["<provider>"] },
  { words: ["runtime", "install"], args: ["<path>"] },
  { words: ["accounts", "create"], args: ["<name>"] },
  { words: ["accounts", "list"], args: [] },
  { words: ["accounts", "show"], args: ["<account-id>"] },
  { words: ["accounts", "update"], args: ["<account-id>"] },
  { words: ["keys", "create"], args: ["<account-id>"] },
  { words: ["keys", "update"], args: ["<key-id>"] },
  { words: ["keys", "list"], args: ["<account-id>"] },
  { words: ["keys", "revoke"], args: ["<key-id>"] },
  { words: ["credits", "add"], args: ["<account-id>", "<USD>"] },
  { words: ["credits", "deduct"], args: ["<account-id>", "<USD>"] },
  { words: ["ledger"], args: ["<account-id>"] },
  { words: ["catalog", "list"], args: [] },
  { words: ["catalog", "show"], args: ["<model-id>"] },
  { words: ["catalog", "add"], args: ["<model-id>"] },
  { words: ["catalog", "update"], args: ["<model-id>"] },
  { words: ["catalog", "disable"], args: ["<model-id>"] },
  { words: ["catalog", "enable"], args: ["<model-id>"] },
  { words: ["catalog", "remove"], args: ["<model-id>"] },
  { words: ["upstreams", "list"], args: [] },
  { words: ["upstreams", "add"], args: ["<name>"] },
  { words: ["upstreams", "update"], args: ["<name>"] },
  { words: ["upstreams", "remove"], args: ["<name>"] },
  { words: ["routes", "list"], args: [] },
  { words: ["routes", "add"], args: ["<model-id>", "<upstream>"] },
  { words: ["routes", "offline"], args: ["<model-id>"] },
  { words: ["routes", "remove"], args: ["<model-id>"] },
  { words: ["routes", "test"], args: ["<model-id>"] },
];

/** Commands whose extra positionals are free (model ids). */
const OPEN_ENDED = new Set(["models pull"]);

export type Resolved = { ok: true; name: string; args: string[] } | { ok: false; message: string };

/** Matches the positionals against the table: the command's name and its arguments, or why not. */
export function resolveCommand(positional: string[]): Resolved {
  const words = positional.length === 0 ? ["serve"] : positional;
  const spec = COMMANDS.find((c) => c.words.every((w, i) => words[i] === w));
  if (!spec) {
    const group = COMMANDS.filter((c) => c.words.length > 1 && c.words[0] === words[0]);
    const shown = words.slice(0, group.length > 0 ? 2 : 1).join(" ");
    const hint = group.length > 0 ? ` (${words[0]}: ${group.map((c) => c.words[1]).join(", ")})` : "";
    return { ok: false, message: `unknown command '${shown}'${hint}. Run 'switchyard --help'.` };
  }
  const name = spec.words.join(" ");
  const args = words.slice(spec.words.length);
  for (const [i, arg] of spec.args.entries()) {
    if (args[i] === undefined || args[i] === "") return { ok: false, message: `${name}: missing ${arg}. Run 'switchyard --help'.` };
  }
  if (args.length > spec.args.length && !OPEN_ENDED.has(name)) {
    return { ok: false, message: `${name}: unexpected argument '${args[spec.args.length]}'. Run 'switchyard --help'.` };
  }
  return { ok: true, name, args };
}
