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
import { parseArgs } from "./args";
import { print } from "./output";

export const HELP = `${SERVICE_NAME} ${VERSION} — OpenAI-compatible inference API in one executable

Usage:
  switchyard [serve]                          start the server (configured by environment variables)
  switchyard accounts create <name> [--credits USD]
  switchyard accounts list
  switchyard accounts show <account-id>
  switchyard accounts update <account-id> [--disabled true|false] [--rate-limit-rpm N|default] [--concurrency-limit N|default]
  switchyard keys create <account-id> [--name NAME]     prints the key once
  switchyard keys list <account-id>
  switchyard keys revoke <key-id>
  switchyard credits add <account-id> <USD> [--reason TEXT]
  switchyard credits deduct <account-id> <USD> [--reason TEXT]
  switchyard ledger <account-id>
  switchyard models pull [--provider cpu|cuda] [model-id ...]
                                              download model files (those for the provider) into SWITCHYARD_MODELS_DIR
  switchyard models list                      which model files are expected and present
  switchyard runtime list                     the GPU, the ONNX provider chosen, the CUDA libraries found
  switchyard runtime pull cuda [--all]        download ONNX Runtime's CUDA provider and what the system lacks
  switchyard runtime install PATH             the same from wheels copied in by hand (offline boxes)
  switchyard doctor [--onnx FILE [--run]] [--image FILE]   self-check of ONNX Runtime and sharp (JSON)
  switchyard migrate                          bring the store's schema up to date (start-up does it too)
  switchyard --help | --version

Environment (defaults in brackets):
  PORT [8080], HOST [0.0.0.0]            listen address
  SWITCHYARD_DATA_DIR [./data]           SQLite database
  SWITCHYARD_DATABASE_URL                PostgreSQL instead of SQLite (postgres://...), shared by N instances
  SWITCHYARD_DATABASE_POOL [10], SWITCHYARD_INSTANCE_TIMEOUT_SECONDS [15]
  SWITCHYARD_ADMIN_TOKEN                 enables /admin/* (at least 16 characters)
  SWITCHYARD_UPSTREAM_URL, _UPSTREAM_KEY default OpenAI-compatible upstream (base URL ending at /v1)
  SWITCHYARD_ROUTES                      routes JSON file or inline JSON (several upstreams)
  SWITCHYARD_CATALOG                     catalog JSON extending the embedded one
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

export async function runCli(argv: string[]): Promise<number> {
  const { positional, flags } = parseArgs(argv);
  if (flags.help || positional[0] === "help") {
    process.stdout.write(HELP + "\n");
    return 0;
  }
  if (flags.version) {
    process.stdout.write(VERSION + "\n");
    return 0;
  }
  // Before loading configuration: the self-check must work even when the configuration is wrong.
  if (positional[0] === "doctor") return (await import("./doctor")).runDoctor(flags);
  let config: Config;
  try {
    config = loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) return fail(`configuration error: ${e.message}`);
    throw e;
  }
  const [command = "serve", sub, ...rest] = positional;
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
  if (command === "runtime") return (await import("./runtime")).runRuntimeCommand(config, positional[1], positional.slice(2), flags);
  if (command === "models") {
    const { runModelsCommand } = await import("./models");
    return runModelsCommand(config, sub, rest);
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
    const out = await adminCommand(admin, command, sub, rest, flags);
    if (out === undefined) return fail(`unknown command '${[command, sub].filter(Boolean).join(" ")}'. Run 'switchyard --help'.`);
    print(out);
    return 0;
  } catch (e) {
    if (e instanceof DomainError) return fail(e.message);
    throw e;
  } finally {
    await services.close();
  }
}

function limitFlag(v: string | boolean | undefined): number | null | undefined {
  if (v === undefined || v === true) return undefined;
  if (v === "default") return null;
  return /^-?\d+$/.test(v as string) ? Number(v) : (v as unknown as number);
}

function adminCommand(admin: Admin, command: string, sub: string | undefined, rest: string[], flags: Record<string, string | boolean>): unknown {
  const need = (value: string | undefined, what: string): string => {
    if (!value) throw new DomainError("invalid_request", "missing_argument", `missing ${what}. Run 'switchyard --help'.`);
    return value;
  };
  // `ledger <account-id>` has no subcommand word: its second word is the id.
  if (command === "ledger") return admin.ledger(need(sub, "<account-id>"));
  switch (`${command} ${sub ?? ""}`.trim()) {
    case "accounts create":
      return admin.createAccount({ name: need(rest[0], "<name>"), ...(flags.credits !== undefined ? { credits: String(flags.credits) } : {}) });
    case "accounts list":
      return admin.listAccounts();
    case "accounts show":
      return admin.getAccount(need(rest[0], "<account-id>"));
    case "accounts update":
      return admin.patchAccount(need(rest[0], "<account-id>"), {
        ...(flags.disabled !== undefined ? { disabled: flags.disabled === true || flags.disabled === "true" } : {}),
        ...(flags["rate-limit-rpm"] !== undefined ? { rate_limit_rpm: limitFlag(flags["rate-limit-rpm"]) } : {}),
        ...(flags["concurrency-limit"] !== undefined ? { concurrency_limit: limitFlag(flags["concurrency-limit"]) } : {}),
      });
    case "keys create":
      return admin.createKey(need(rest[0], "<account-id>"), { ...(typeof flags.name === "string" ? { name: flags.name } : {}) });
    case "keys list":
      return admin.listKeys(need(rest[0], "<account-id>"));
    case "keys revoke":
      return admin.revokeKey(need(rest[0], "<key-id>"));
    case "credits add":
    case "credits deduct": {
      const amount = need(rest[1], "<USD>");
      if (amount.startsWith("-")) throw new DomainError("invalid_request", "invalid_value", `<USD> must be positive; use 'credits ${sub === "add" ? "deduct" : "add"}' instead.`);
      return admin.adjustCredits(need(rest[0], "<account-id>"), {
        amount: sub === "deduct" ? `-${amount}` : amount,
        reason: typeof flags.reason === "string" ? flags.reason : `cli credits ${sub}`,
      });
    }
    default:
      return undefined;
  }
}
