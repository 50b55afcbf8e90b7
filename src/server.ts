/**
 * Starts the HTTP server over a set of services: releases holds abandoned by a previous process,
 * listens, and shuts down gracefully on SIGINT/SIGTERM (drained, then queued settlements flushed).
 */
import { ConfigError, type Config } from "./config";
import { createServices, type ServiceOverrides, type Services } from "./services";
import { ProviderError } from "./runtime/provider";
import { createApp } from "./http/app";
import { SERVICE_NAME, VERSION } from "./version";
import { startLocalEngines } from "./engines/index";
import { networkInterfaces } from "node:os";

const SWEEP_INTERVAL_MS = 10 * 60_000;
/** How long start-up waits for the upstreams' first model lists. */
const FIRST_LIST_WAIT_MS = 5_000;

export interface RunningServer {
  url: string;
  port: number;
  services: Services;
  /** Stops at once: connections closed, the store closed (tests; see shutdown for signals). */
  stop(): Promise<void>;
  /**
   * The graceful stop a signal starts (docs/operate.md, "Stopping and readiness"): readiness and new
   * requests turn 503 at once while the listener stays open; requests in flight get the grace
   * period to finish; streams still open then end with their error event, unbilled; then the
   * server and the store close. One log line per step. Idempotent.
   */
  shutdown(signal: string): Promise<void>;
}

/** After the grace period, how long cut streams get to write their error event before connections close. */
const CUT_FLUSH_MS = 2_000;

/** Listens, turning a port or host that cannot be used into one line naming the variable. */
function listen(app: ReturnType<typeof createApp>["app"], config: Config): void {
  try {
    app.listen({
      port: config.port,
      hostname: config.host,
      // We enforce the contract's limit ourselves (413 with our error shape, see http/body.ts):
      // Bun's own limit would answer first with a bare 413, so it is set out of the way.
      maxRequestBodySize: Number.MAX_SAFE_INTEGER,
      idleTimeout: 60,
      // Elysia asks Bun for SO_REUSEPORT; a second server on the same port would then share its
      // traffic silently (and split the in-memory holds and limits). A busy port must fail start-up.
      reusePort: false,
    });
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === "EADDRINUSE") throw new ConfigError("PORT", `${config.port} is already in use on ${config.host}`);
    throw new ConfigError("HOST", `cannot listen on ${config.host}:${config.port} (${(e as Error).message})`);
  }
}

const bracket = (host: string) => (host.includes(":") ? `[${host}]` : host);

/**
 * The address the server is bound to, one to reach it from this machine (loopback when bound to
 * every interface) and, then, one from the network (the first non-internal IPv4 address), if any.
 */
export function addresses(host: string, port: number): { listen: string; url: string; network: string | null } {
  const any = host === "0.0.0.0" || host === "::";
  const local = host === "::" ? "::1" : any ? "127.0.0.1" : host;
  let network: string | null = null;
  if (any) {
    const ip = Object.values(networkInterfaces())
      .flat()
      .find((i) => i && i.family === "IPv4" && !i.internal);
    if (ip) network = `http://${ip.address}:${port}`;
  }
  return { listen: `http://${bracket(host)}:${port}`, url: `http://${bracket(local)}:${port}`, network };
}

export async function startServer(config: Config, overrides: ServiceOverrides = {}): Promise<RunningServer> {
  const services = await createServices(config, overrides, "serve");
  // SWITCHYARD_ONNX_PROVIDER=cuda that cannot be honoured stops start-up, saying what to install.
  try {
    services.onnxProvider();
  } catch (e) {
    await services.close();
    if (e instanceof ProviderError) throw new ConfigError("SWITCHYARD_ONNX_PROVIDER", `cuda: ${e.message}`);
    throw e;
  }
  let released: number;
  try {
    released = await services.ledger.releaseAbandoned();
  } catch (e) {
    await services.close();
    if (config.databaseUrl) throw new ConfigError("SWITCHYARD_DATABASE_URL", "cannot write the PostgreSQL database (unreachable, read-only or full)");
    throw new ConfigError("SWITCHYARD_DATA_DIR", `cannot write the database in ${config.dataDir} (disk full, read-only or locked by another process)`);
  }
  if (released > 0) services.log.warn("released holds of requests that never finished", { holds: released });
  // No hold outlives SWITCHYARD_HOLD_EXPIRY_SECONDS, whatever its request is doing.
  services.ledger.startExpirySweep(Math.min(60, Math.max(1, Math.floor(config.holdExpirySeconds / 4))) * 1000);
  const { app } = createApp(services);
  try {
    listen(app, config);
  } catch (e) {
    await services.close();
    throw e;
  }
  // After listening, so a busy port fails at once; local models go live as they finish loading.
  await startLocalEngines(services);
  // What each upstream serves (README, "Serve your own model"): the first answers are awaited a
  // moment, so a started server lists what its engines serve; a slow engine holds nothing back.
  await services.upstreamModels.start(FIRST_LIST_WAIT_MS);
  const server = app.server!;
  const { listen: listenUrl, url, network } = addresses(config.host, server.port!);
  if (config.upstreamUrl && !/\/v1$/.test(config.upstreamUrl)) {
    services.log.warn("SWITCHYARD_UPSTREAM_URL does not end at /v1; chat requests go to <it>/chat/completions", {});
  }
  // Written at every log level but silent: the bound port (PORT=0 picks one) and where to reach it.
  services.log.notice("listening", { service: SERVICE_NAME, version: VERSION, listen: listenUrl, url, ...(network ? { network } : {}), data_dir: config.dataDir, store: config.databaseUrl ? "postgresql" : "sqlite", upstream: config.upstreamUrl ? "configured" : "none" });
  // Expired stored responses are deleted every 10 minutes (reads already treat them as gone).
  services.responses.startSweeping(SWEEP_INTERVAL_MS, (e) => services.log.warn("sweep of expired stored responses failed; retried later", { error: String((e as Error)?.message ?? e).slice(0, 200) }));
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await app.stop(true);
    await services.engines.closeAll();
    await services.close();
  };
  let shuttingDown: Promise<void> | null = null;
  const shutdown = async (signal: string) => {
    const { drain, log } = services;
    const graceMs = config.shutdownGraceMs;
    log.info("signal received; stopping", { signal, grace_seconds: graceMs / 1000 });
    drain.beginStopping();
    log.info("draining", { requests: drain.inFlight, streams: drain.openStreams });
    if (!(await drain.idle(graceMs))) {
      const open = drain.inFlight;
      const cut = drain.cutAll();
      log.warn("grace period expired; cutting what is still open", { cut_streams: cut, requests: open });
      await drain.idle(CUT_FLUSH_MS);
    }
    await stop();
    log.info("stopped", { signal });
  };
  return {
    url,
    port: server.port!,
    services,
    stop,
    shutdown(signal) {
      shuttingDown ??= shutdown(signal);
      return shuttingDown;
    },
  };
}
