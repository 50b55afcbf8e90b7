/**
 * Where each public chat model can be served: named upstreams and per-model routes.
 * Built from SWITCHYARD_UPSTREAM_URL (one upstream serving every chat model under its public id)
 * and, later, SWITCHYARD_ROUTES. Nothing from here is ever shown to a client.
 */
import type { Config } from "../config";

export interface Upstream {
  name: string;
  baseUrl: string;
  apiKey: string | null;
  connectTimeoutMs: number;
  firstByteTimeoutMs: number;
  idleTimeoutMs: number;
}

export interface Route {
  upstream: Upstream;
  /** The model name the upstream knows. */
  model: string;
  weight: number;
  /** Serves turbo (priority-tier) requests. */
  priority: boolean;
}

export interface RouteRegistry {
  /** Candidate routes for a public chat model id, best first; empty when the model is not live. */
  routesFor(publicId: string, tier: "default" | "priority"): Route[];
  hasRoute(publicId: string): boolean;
}

export const DEFAULT_TIMEOUTS = { connectTimeoutMs: 10_000, firstByteTimeoutMs: 120_000, idleTimeoutMs: 120_000 };

/** The one-line default: every chat model goes to SWITCHYARD_UPSTREAM_URL under its public id. */
export class DefaultUpstreamRegistry implements RouteRegistry {
  private readonly upstream: Upstream | null;

  constructor(config: Pick<Config, "upstreamUrl" | "upstreamKey">) {
    this.upstream = config.upstreamUrl
      ? { name: "default", baseUrl: config.upstreamUrl, apiKey: config.upstreamKey, ...DEFAULT_TIMEOUTS }
      : null;
  }

  routesFor(publicId: string): Route[] {
    return this.upstream ? [{ upstream: this.upstream, model: publicId, weight: 1, priority: false }] : [];
  }

  hasRoute(): boolean {
    return this.upstream !== null;
  }
}
