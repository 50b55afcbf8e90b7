/**
 * Starts the HTTP server over a set of services: releases holds abandoned by a previous process,
 * listens, and shuts down cleanly (queued settlements flushed) on SIGINT/SIGTERM.
 */
import { ConfigError, type Config } from "./config";
import { createServices, type ServiceOverrides, type Services } from "./services";
import { createApp } from "./http/app";
import { SERVICE_NAME, VERSION } from "./version";
import { startLocalEngines } from "./engines/index";

export interface RunningServer {
  url: string;
  port: number;
  services: Services;
  stop(): Promise<void>;
}

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

export async function startServer(config: Config, overrides: ServiceOverrides = {}): Promise<RunningServer> {
  const services = await createServices(config, overrides, "serve");
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
  const server = app.server!;
  const url = `http://${config.host === "0.0.0.0" ? "127.0.0.1" : config.host}:${server.port}`;
  if (config.upstreamUrl && !/\/v1$/.test(config.upstreamUrl)) {
    services.log.warn("SWITCHYARD_UPSTREAM_URL does not end at /v1; chat requests go to <it>/chat/completions", {});
  }
  services.log.info("listening", { service: SERVICE_NAME, version: VERSION, url, data_dir: config.dataDir, store: config.databaseUrl ? "postgresql" : "sqlite", upstream: config.upstreamUrl ? "configured" : "none" });
  let stopped = false;
  return {
    url,
    port: server.port!,
    services,
    async stop() {
      if (stopped) return;
      stopped = true;
      await app.stop(true);
      await services.engines.closeAll();
      await services.close();
    },
  };
}
