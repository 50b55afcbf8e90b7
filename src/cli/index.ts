/**
 * The command line: `switchyard [serve]`, and administration of the local database
 * (`accounts`, `keys`, `credits`) over the same code as the admin HTTP API.
 */
import { ConfigError, loadConfig, type Config } from "../config";
import { CatalogError } from "../catalog/catalog";
import { startServer } from "../server";
import { createServices } from "../services";
import { Admin } from "../accounts/admin";
import { DomainError } from "../errors";
import { SERVICE_NAME, VERSION } from "../version";
import { parseCommandLine } from "./command-line";
import { usageOf, type CommandSpec } from "./commands";
import { adminCommand } from "./admin";
import { print } from "./output";
import { listTable } from "./lists";

export const HELP = `${SERVICE_NAME} ${VERSION} — OpenAI-compatible inference API in one executable

Usage:
  switchyard [serve]                          start the server (configured by environment variables)
  switchyard demo [--port N] [--dir DIR]      a working demo on 127.0.0.1 (echo engine, tiny models,
                                              a key with credits; prints curl commands); Ctrl-C stops
  switchyard accounts create <name> [--credits USD]
  switchyard accounts list [--json]
  switchyard accounts show <account-id>
  switchyard accounts update <account-id> [--disabled true|false] [--rate-limit-rpm N|default] [--concurrency-limit N|default]
  switchyard keys create <account-id> [--name NAME] [KEY CONTROLS]   prints the key once
  switchyard keys update <key-id> [--name NAME] [KEY CONTROLS]
      KEY CONTROLS: --limit USD|none  --limit-reset daily|weekly|monthly|never  --expires-at ISO-8601|never
                    --models ID,ID,...|all  --rate-limit-rpm N|none
  switchyard keys list <account-id> [--json]
  switchyard keys revoke <key-id>
  switchyard credits add <account-id> <USD> [--reason TEXT]
  switchyard credits deduct <account-id> <USD> [--reason TEXT]
  switchyard ledger <account-id> [--json]
  switchyard catalog list [--json] | show <model-id>     every catalog entry, its source and prices
  switchyard catalog add <model-id> --kind chat --owned-by LAB --context-window N --input-price USD --output-price USD
                     [--max-output-tokens N] [--characters-price USD] [--turbo true] [--image true]
                     [--cached-input-price USD] [--cache-write-price USD]   prompt tokens read from / written to the engine's cache
  switchyard catalog update <model-id> [same flags] [--enabled true|false]   prices apply to requests that start after
  switchyard catalog disable|enable|remove <model-id>   remove: drop the live entry (file/embedded one serves again)
  switchyard upstreams list | add <name> --base-url URL [--key-stdin | --key-env VAR] [--connect-ms N]
                     [--first-byte-ms N] [--idle-ms N] [--keep-alive true|false] [--ca-file F] [--cert-file F --key-file F]
  switchyard upstreams update <name> [same flags] | remove <name>
  switchyard routes list | add <model-id> <upstream> [--upstream-model M] [--weight N] [--priority true] [--pinned true]
  switchyard routes offline <model-id> | remove <model-id> | test <model-id> [--route N]   test: a tiny unbilled chat request
  switchyard models pull [--provider cpu|cuda] [model-id ...]
                                              download model files (those for the provider) into SWITCHYARD_MODELS_DIR
  switchyard models list                      which model files are expected and present
  switchyard runtime list                     the GPU, the ONNX provider chosen, the CUDA libraries found
  switchyard runtime pull cuda [--all]        download ONNX Runtime's CUDA provider and what the system lacks
  switchyard runtime install PATH             the same from wheels copied in by hand (offline boxes)
  switchyard doctor [--onnx FILE [--run]] [--image FILE]   self-check (JSON): ONNX Runtime, sharp,
                                              data/models directories, upstreams, ONNX provider
  switchyard migrate                          bring the store's schema up to date (start-up does it too)
  switchyard healthcheck                      exit 0 when the server on HOST:PORT answers /healthz (for containers)
  switchyard version | --version | -v         version, commit, build date, Bun and ONNX Runtime versions
  switchyard --help | <command> --help         everything, or one command's options (others are refused)
List commands print a table; --json prints JSON. Other commands print JSON.

Environment (defaults in brackets):
  PORT [8080], HOST [0.0.0.0]            listen address
  SWITCHYARD_DATA_DIR [./data]           SQLite database
  SWITCHYARD_DATABASE_URL                PostgreSQL instead of SQLite (postgres://...), shared by N instances
  SWITCHYARD_DATABASE_POOL [10], SWITCHYARD_INSTANCE_TIMEOUT_SECONDS [15]
  SWITCHYARD_ADMIN_TOKEN                 enables /admin/* (at least 16 characters)
  SWITCHYARD_UPSTREAM_URL, _UPSTREAM_KEY default OpenAI-compatible upstream (base URL ending at /v1)
  SWITCHYARD_ROUTES                      routes JSON file or inline JSON (several upstreams)
  SWITCHYARD_CATALOG                     catalog JSON extending the embedded one
  SWITCHYARD_DEFAULT_PRICE [none]        "in,out" USD per 1M tokens for served models the catalog lacks
  SWITCHYARD_DEFAULT_CONTEXT_WINDOW [32768], SWITCHYARD_UPSTREAM_MODELS_REFRESH_SECONDS [60]
  SWITCHYARD_LIVE_CONFIG_POLL_SECONDS [5]  how often a server reads catalog/upstreams/routes changes the CLI made
  SWITCHYARD_MODELS_DIR [./models]       local model files (see 'switchyard models list')
  SWITCHYARD_RATE_LIMIT_RPM [600], SWITCHYARD_CONCURRENCY_LIMIT [32]   per-account limits
  SWITCHYARD_MAX_BODY_BYTES [33554432], SWITCHYARD_ONNX_PROVIDER [auto|cpu|cuda],
  SWITCHYARD_RUNTIME_DIR [<data dir>/runtime]   CUDA libraries from 'switchyard runtime pull cuda'
  SWITCHYARD_LOG_LEVEL [info], SWITCHYARD_IMAGE_MAX_BYTES / _MAX_PIXELS / _MAX_EDGE
  SWITCHYARD_DASHBOARD [on|off], SWITCHYARD_DASHBOARD_SESSION_SECONDS [43200]   web dashboard at /dashboard
  SWITCHYARD_DASHBOARD_KEY_SIGNINS_PER_MINUTE [10], _ADDRESS_SIGNINS_PER_MINUTE [30],
  SWITCHYARD_DASHBOARD_SESSIONS_PER_ACCOUNT [20], _OPERATOR_SESSIONS [50]   dashboard sign-in limits
  SWITCHYARD_TRUSTED_PROXIES [none]      proxies (addresses, CIDR blocks) whose X-Forwarded-For names the client
Reference: GET /docs on a running server.`;

function fail(message: string): number {
  process.stderr.write(`switchyard: ${message}\n`);
  return 2;
}

/** An option's value when it is text (the parser's values are typed by each option's kind). */
const textOf = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/** The help a command line asked for: the whole of it, or one command's usage line. */
function helpText(spec: CommandSpec | null): string {
  return spec === null ? HELP : `usage: ${usageOf(spec)}\nEvery command and the environment: switchyard --help`;
}

export async function runCli(argv: string[]): Promise<number> {
  // The command line is checked before configuration is read or any store opened: an unknown
  // command or option, or a missing argument, creates nothing (no ./data, no database).
  const line = parseCommandLine(argv);
  if (line.kind === "error") return fail(line.message);
  if (line.kind === "help") {
    process.stdout.write(helpText(line.spec) + "\n");
    return 0;
  }
  const parsed = line.command;
  const { name: command, args, options } = parsed;
  if (command === "version") {
    const { formatVersion, versionReport } = await import("./version");
    const report = versionReport();
    process.stdout.write(options.json ? JSON.stringify(report, null, 2) + "\n" : formatVersion(report));
    return 0;
  }
  // Before loading configuration: the self-check must work even when the configuration is wrong.
  if (command === "doctor") return (await import("./doctor")).runDoctor(options);
  // The demo builds its own configuration and ignores the environment's (README "Try it").
  if (command === "demo") return (await import("../demo/run")).runDemo({ port: textOf(options.port), dir: textOf(options.dir) });
  let config: Config;
  try {
    config = loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) return fail(`configuration error: ${e.message}`);
    throw e;
  }
  if (command === "serve") {
    try {
      const server = await startServer(config);
      // A rejection nobody handled is a bug; it is logged as one JSON line like everything else,
      // never as a raw stack trace that breaks the log.
      process.on("unhandledRejection", (reason) => {
        server.services.log.error("unhandled rejection", { error: String((reason as Error)?.stack ?? reason).slice(0, 2000) });
      });
      const shutdown = async (signal: string) => {
        await server.shutdown(signal);
        process.exit(0);
      };
      process.on("SIGINT", () => void shutdown("SIGINT"));
      process.on("SIGTERM", () => void shutdown("SIGTERM"));
      return await new Promise<number>(() => {});
    } catch (e) {
      if (e instanceof ConfigError || e instanceof CatalogError) return fail(`configuration error: ${e.message}`);
      return fail(String((e as Error).message));
    }
  }
  if (command === "migrate") return (await import("./migrate")).runMigrateCommand(config);
  if (command === "healthcheck") return (await import("./healthcheck")).runHealthcheck(config);
  if (command.startsWith("runtime ")) return (await import("./runtime")).runRuntimeCommand(config, command.slice("runtime ".length), args, options as Record<string, string | boolean>);
  if (command.startsWith("models ")) {
    const { runModelsCommand } = await import("./models");
    return runModelsCommand(config, command.slice("models ".length), args, options);
  }
  let services: Awaited<ReturnType<typeof createServices>>;
  try {
    services = await createServices(config);
  } catch (e) {
    if (e instanceof ConfigError) return fail(`configuration error: ${e.message}`);
    if (e instanceof CatalogError) return fail(`configuration error: ${e.message}`);
    throw e;
  }
  const admin = new Admin(services);
  try {
    const live = /^(catalog|upstreams|routes) /.test(command);
    const out = live ? await (await import("./catalog")).catalogCommand(services, parsed) : await adminCommand(admin, parsed);
    const text = options.json ? null : listTable(command, out);
    if (text !== null) process.stdout.write(text);
    else print(out);
    return 0;
  } catch (e) {
    if (e instanceof DomainError) return fail(e.message);
    throw e;
  } finally {
    await services.close();
  }
}
