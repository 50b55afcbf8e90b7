import { describe, expect, test } from "bun:test";
import { parseCommandLine, type CommandLine } from "./command-line";
import { COMMANDS, usageOf } from "./commands";

function run(line: CommandLine) {
  if (line.kind !== "run") throw new Error(`expected a command to run, got ${JSON.stringify(line)}`);
  return line.command;
}

function error(line: CommandLine): string {
  if (line.kind !== "error") throw new Error(`expected an error, got ${JSON.stringify(line)}`);
  return line.message;
}

describe("the command line", () => {
  test("no words is serve; --version and -v are the version command", () => {
    expect(run(parseCommandLine([])).name).toBe("serve");
    expect(run(parseCommandLine(["--version", "--json"]))).toMatchObject({ name: "version", options: { json: true } });
    expect(run(parseCommandLine(["-v"])).name).toBe("version");
  });

  test("options may come before, between or after the arguments, in either spelling", () => {
    for (const argv of [
      ["credits", "add", "acct_1", "2.5", "--reason", "bonus"],
      ["credits", "add", "--reason=bonus", "acct_1", "2.5"],
      ["credits", "add", "acct_1", "--reason", "bonus", "2.5"],
    ]) {
      expect(run(parseCommandLine(argv))).toMatchObject({ name: "credits add", args: ["acct_1", "2.5"], options: { reason: "bonus" } });
    }
  });

  test("a bare flag takes no value: `keys list --json acct_1` keeps acct_1 an argument", () => {
    expect(run(parseCommandLine(["keys", "list", "--json", "acct_1"]))).toMatchObject({ args: ["acct_1"], options: { json: true } });
  });

  test("an option the command does not take is refused naming it and what it takes", () => {
    expect(error(parseCommandLine(["accounts", "create", "alice", "--credts", "25"]))).toBe(
      "accounts create: unknown option '--credts' (it takes --credits, --json). Run 'switchyard accounts create --help'.",
    );
    expect(error(parseCommandLine(["migrate", "--json"]))).toContain("unknown option '--json' (it takes none)");
    expect(error(parseCommandLine(["--credits", "5", "accounts", "create", "x"]))).toContain("unknown option '--credits'");
  });

  test("a missing value, a value for a bare flag and an option given twice are refused naming the option", () => {
    expect(error(parseCommandLine(["accounts", "create", "alice", "--credits"]))).toContain("--credits needs a value (USD).");
    expect(error(parseCommandLine(["accounts", "create", "alice", "--credits", "--json"]))).toContain("--credits needs a value (USD).");
    expect(error(parseCommandLine(["credits", "add", "a", "1", "--reason", "-x"]))).toContain("--reason needs a value (TEXT); write --reason=-x for one that starts with '-'.");
    expect(run(parseCommandLine(["credits", "add", "a", "1", "--reason=-x"])).options.reason).toBe("-x");
    expect(error(parseCommandLine(["version", "--json=yes"]))).toContain("--json takes no value.");
    expect(error(parseCommandLine(["keys", "update", "key_1", "--name", "a", "--name", "b"]))).toContain("--name is given twice.");
  });

  test("values are converted by their kind, and a malformed one is refused naming the option and the rule", () => {
    const update = run(parseCommandLine(["accounts", "update", "acct_1", "--disabled", "false", "--rate-limit-rpm", "60", "--concurrency-limit", "default"]));
    expect(update.fields).toEqual({ disabled: false, rate_limit_rpm: 60, concurrency_limit: null });
    expect(error(parseCommandLine(["accounts", "update", "acct_1", "--disabled", "yes"]))).toContain("--disabled must be true or false, got 'yes'.");
    expect(error(parseCommandLine(["catalog", "add", "m", "--context-window", "lots"]))).toContain("--context-window must be a whole number, got 'lots'.");
    expect(error(parseCommandLine(["routes", "add", "m", "up", "--weight", "heavy"]))).toContain("--weight must be a number, got 'heavy'.");
    expect(error(parseCommandLine(["models", "pull", "--provider", "gpu"]))).toContain("--provider must be cpu or cuda, got 'gpu'.");
  });

  test("a negative number is a value, not an option, so the rule it breaks is the one named", () => {
    expect(run(parseCommandLine(["accounts", "update", "acct_1", "--rate-limit-rpm", "-3"])).fields).toEqual({ rate_limit_rpm: -3 });
    expect(run(parseCommandLine(["credits", "add", "acct_1", "-5"])).args).toEqual(["acct_1", "-5"]);
    expect(run(parseCommandLine(["accounts", "create", "x", "--credits", "-0.5"])).fields).toEqual({ credits: "-0.5" });
  });

  test("options fill the admin API's body at their fields, nested where the field is", () => {
    const add = run(parseCommandLine([
      "catalog", "add", "acme/m", "--kind", "chat", "--context-window", "32768", "--input-price", "0.3", "--output-price", "0.9", "--image", "true",
    ]));
    expect(add.fields).toEqual({ kind: "chat", context_window: 32768, pricing: { input_per_million: "0.3", output_per_million: "0.9" }, input_modalities: ["text", "image"] });
    const upstream = run(parseCommandLine(["upstreams", "add", "gpu-2", "--base-url", "http://10.0.0.6:8000/v1", "--connect-ms", "500", "--ca-file", "ca.pem", "--key-stdin"]));
    expect(upstream.fields).toEqual({ base_url: "http://10.0.0.6:8000/v1", timeouts: { connect_ms: 500 }, tls: { ca_file: "ca.pem" } });
    expect(upstream.options["key-stdin"]).toBe(true);
    const key = run(parseCommandLine(["keys", "update", "key_1", "--limit", "none", "--models", "a, b,", "--expires-at", "never", "--rate-limit-rpm", "none"]));
    expect(key.fields).toEqual({ limit: null, models: ["a", "b"], expires_at: null, rate_limit_rpm: null });
  });

  test("arguments are counted: a missing one and an extra one are refused", () => {
    expect(error(parseCommandLine(["credits", "add", "acct_1"]))).toBe("credits add: missing <USD>. Run 'switchyard credits add --help'.");
    expect(error(parseCommandLine(["accounts", "list", "extra"]))).toContain("unexpected argument 'extra'");
    expect(run(parseCommandLine(["models", "pull", "voice-82m", "embedding-300m"])).args).toEqual(["voice-82m", "embedding-300m"]);
    expect(error(parseCommandLine(["accounts", "frob"]))).toBe("unknown command 'accounts frob' (accounts: create, list, show, update). Run 'switchyard --help'.");
  });

  test("--help and -h: the whole help alone or for an unknown command, a command's usage after it", () => {
    expect(parseCommandLine(["--help"])).toEqual({ kind: "help", spec: null });
    expect(parseCommandLine(["help"])).toEqual({ kind: "help", spec: null });
    expect(parseCommandLine(["frobnicate", "-h"])).toEqual({ kind: "help", spec: null });
    const help = parseCommandLine(["accounts", "create", "--credts", "--help"]);
    expect(help.kind === "help" && help.spec !== null && usageOf(help.spec)).toBe("switchyard accounts create <name> [--credits USD] [--json]");
  });

  test("every command's usage line names each of its options", () => {
    for (const spec of COMMANDS) {
      const usage = usageOf(spec);
      for (const name of Object.keys(spec.options)) expect(usage).toContain(`[--${name}`);
    }
  });
});
