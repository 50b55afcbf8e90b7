/**
 * The commands the CLI knows, the arguments each one needs and the options it takes, checked
 * before anything is opened: an unknown command, a missing argument or an option the command does
 * not take creates no data directory and touches no database. Adding an option is one line here
 * (its kind and, for the admin API's commands, the request body field it fills).
 */
import { decimal, flag, listOrNone, oneOf, text, textOrNone, trueFalse, trueFalseAs, whole, type Options } from "./options";

export interface CommandSpec {
  /** The command words, e.g. ["accounts", "create"]. */
  words: string[];
  /** Positional arguments after the words, by name, all required. */
  args: string[];
  /** The options it takes, by name without the dashes. */
  options: Options;
  /** Further positionals are free, shown so in usage (`[model-id ...]`). */
  more?: string;
}

/** Admin commands print JSON, list commands a table unless --json; every one takes --json. */
const JSON_OUT: Options = { json: flag() };

const ACCOUNT_LIMITS: Options = {
  disabled: trueFalse("disabled"),
  "rate-limit-rpm": whole("rate_limit_rpm", "default"),
  "concurrency-limit": whole("concurrency_limit", "default"),
};

/** A key's name and controls, in the admin API's fields (docs/operate.md "Keys: limits, expiry, models"). */
const KEY_CONTROLS: Options = {
  name: text("NAME", "name"),
  limit: textOrNone("USD", "none", "limit"),
  "limit-reset": textOrNone("daily|weekly|monthly", "never", "limit_reset"),
  "expires-at": textOrNone("ISO-8601", "never", "expires_at"),
  models: listOrNone("ID,ID,...", "all", "models"),
  "rate-limit-rpm": whole("rate_limit_rpm", "none"),
};

/** A catalog entry's fields (docs/live-config.md). */
const CATALOG_ENTRY: Options = {
  kind: text("KIND", "kind"),
  "owned-by": text("LAB", "owned_by"),
  "context-window": whole("context_window"),
  "max-output-tokens": whole("max_output_tokens"),
  dimensions: whole("dimensions"),
  "input-price": text("USD", "pricing.input_per_million"),
  "output-price": text("USD", "pricing.output_per_million"),
  "characters-price": text("USD", "pricing.characters_per_million"),
  "cached-input-price": text("USD", "pricing.cached_input_per_million"),
  "cache-write-price": text("USD", "pricing.cache_write_per_million"),
  turbo: trueFalse("turbo"),
  image: trueFalseAs("input_modalities", (on) => (on ? ["text", "image"] : ["text"])),
  enabled: trueFalse("enabled"),
};

/** An upstream's fields; its key comes on standard input (--key-stdin) or from a variable. */
const UPSTREAM: Options = {
  "base-url": text("URL", "base_url"),
  "key-stdin": flag(),
  "key-env": text("VAR", "key_env"),
  "connect-ms": whole("timeouts.connect_ms"),
  "first-byte-ms": whole("timeouts.first_byte_ms"),
  "idle-ms": whole("timeouts.idle_ms"),
  "keep-alive": trueFalse("keep_alive"),
  "ca-file": text("FILE", "tls.ca_file"),
  "cert-file": text("FILE", "tls.cert_file"),
  "key-file": text("FILE", "tls.key_file"),
};

/** One route's fields, besides its upstream (an argument). */
const ROUTE: Options = {
  "upstream-model": text("M", "model"),
  weight: decimal("weight"),
  priority: trueFalse("priority"),
  pinned: trueFalse("pinned"),
};

export const COMMANDS: CommandSpec[] = [
  { words: ["serve"], args: [], options: {} },
  { words: ["demo"], args: [], options: { port: text("N"), dir: text("DIR") } },
  { words: ["version"], args: [], options: JSON_OUT },
  { words: ["doctor"], args: [], options: { onnx: text("FILE"), run: flag(), image: text("FILE") } },
  { words: ["healthcheck"], args: [], options: {} },
  { words: ["migrate"], args: [], options: {} },
  { words: ["models", "pull"], args: [], options: { provider: oneOf(["cpu", "cuda"]) }, more: "[model-id ...]" },
  { words: ["models", "list"], args: [], options: {} },
  { words: ["runtime", "list"], args: [], options: {} },
  { words: ["runtime", "pull"], args: ["<provider>"], options: { all: flag(), index: text("URL") } },
  { words: ["runtime", "install"], args: ["<path>"], options: {} },
  { words: ["accounts", "create"], args: ["<name>"], options: { credits: text("USD", "credits"), ...JSON_OUT } },
  { words: ["accounts", "list"], args: [], options: JSON_OUT },
  { words: ["accounts", "show"], args: ["<account-id>"], options: JSON_OUT },
  { words: ["accounts", "update"], args: ["<account-id>"], options: { ...ACCOUNT_LIMITS, ...JSON_OUT } },
  { words: ["keys", "create"], args: ["<account-id>"], options: { ...KEY_CONTROLS, ...JSON_OUT } },
  { words: ["keys", "update"], args: ["<key-id>"], options: { ...KEY_CONTROLS, ...JSON_OUT } },
  { words: ["keys", "list"], args: ["<account-id>"], options: JSON_OUT },
  { words: ["keys", "revoke"], args: ["<key-id>"], options: JSON_OUT },
  { words: ["credits", "add"], args: ["<account-id>", "<USD>"], options: { reason: text("TEXT"), ...JSON_OUT } },
  { words: ["credits", "deduct"], args: ["<account-id>", "<USD>"], options: { reason: text("TEXT"), ...JSON_OUT } },
  { words: ["ledger"], args: ["<account-id>"], options: JSON_OUT },
  { words: ["catalog", "list"], args: [], options: JSON_OUT },
  { words: ["catalog", "show"], args: ["<model-id>"], options: JSON_OUT },
  { words: ["catalog", "add"], args: ["<model-id>"], options: { ...CATALOG_ENTRY, ...JSON_OUT } },
  { words: ["catalog", "update"], args: ["<model-id>"], options: { ...CATALOG_ENTRY, ...JSON_OUT } },
  { words: ["catalog", "disable"], args: ["<model-id>"], options: JSON_OUT },
  { words: ["catalog", "enable"], args: ["<model-id>"], options: JSON_OUT },
  { words: ["catalog", "remove"], args: ["<model-id>"], options: JSON_OUT },
  { words: ["upstreams", "list"], args: [], options: JSON_OUT },
  { words: ["upstreams", "add"], args: ["<name>"], options: { ...UPSTREAM, ...JSON_OUT } },
  { words: ["upstreams", "update"], args: ["<name>"], options: { ...UPSTREAM, ...JSON_OUT } },
  { words: ["upstreams", "remove"], args: ["<name>"], options: JSON_OUT },
  { words: ["routes", "list"], args: [], options: JSON_OUT },
  { words: ["routes", "add"], args: ["<model-id>", "<upstream>"], options: { ...ROUTE, ...JSON_OUT } },
  { words: ["routes", "offline"], args: ["<model-id>"], options: JSON_OUT },
  { words: ["routes", "remove"], args: ["<model-id>"], options: JSON_OUT },
  { words: ["routes", "test"], args: ["<model-id>"], options: { route: whole(), ...JSON_OUT } },
];

/** The command's usage line, from its table entry: `switchyard accounts create <name> [--credits USD] [--json]`. */
export function usageOf(spec: CommandSpec): string {
  const options = Object.entries(spec.options).map(([name, o]) => `[--${name}${o.type === "string" ? ` ${o.value}` : ""}]`);
  return ["switchyard", ...spec.words, ...spec.args, ...(spec.more ? [spec.more] : []), ...options].join(" ");
}
