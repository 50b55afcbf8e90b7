/** Flags that never take a value: `keys list --json acct_1` keeps acct_1 a positional. */
const BOOLEAN_FLAGS = new Set(["json", "help", "version", "run", "key-stdin"]);

/** Minimal argv parsing: positionals, `--flag value`, `--flag=value`, bare `--flag`, -h and -v. */
export function parseArgs(argv: string[]): { positional: string[]; flags: Record<string, string | boolean> } {
  const positional: string[] = [];
  const flags: Record<string, string | boolean> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "-h") flags.help = true;
    else if (a === "-v") flags.version = true;
    else if (a.startsWith("--")) {
      const eq = a.indexOf("=");
      const name = eq > 0 ? a.slice(2, eq) : a.slice(2);
      if (eq > 0) flags[name] = a.slice(eq + 1);
      else if (!BOOLEAN_FLAGS.has(name) && i + 1 < argv.length && !argv[i + 1]!.startsWith("--")) flags[name] = argv[++i]!;
      else flags[name] = true;
    } else positional.push(a);
  }
  return { positional, flags };
}
