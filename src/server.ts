/**
 * Starts the HTTP server over a set of services: releases holds abandoned by a previous process,
 * listens, and shuts down cleanly (queued settlements flushed) on SIGINT/SIGTERM.
 */
import type { Config } from "./config";
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

export async function startServer(config: Config, overrides: ServiceOverrides = {}): Promise<RunningServer> {
  const services = createServices(config, overrides);
  const released = services.ledger.releaseAbandoned();
  if (released > 0) services.log.warn("released holds of requests that never finished", { holds: released });
  await startLocalEngines(services);
  const { app } = createApp(services);
  app.listen({
    port: config.port,
    hostname: config.host,
    // We enforce the contract's limit ourselves (413 with our error shape, see http/body.ts):
    // Bun's own limit would answer first with a bare 413, so it is set out of the way.
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    idleTimeout: 60,
  });
  const server = app.server!;
  const url = `http://${config.host === "0.0.0.0" ? "127.0.0.1" : config.host}:${server.port}`;
  services.log.info("listening", { service: SERVICE_NAME, version: VERSION, url, data_dir: config.dataDir, upstream: config.upstreamUrl ? "configured" : "none" });
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
      services.close();
    },
  };
}
