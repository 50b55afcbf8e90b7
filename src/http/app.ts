/**
 * The HTTP application: request ids, body parsing, the one error hook, the request lifecycle, and
 * then every route module of routes/index.ts, which register themselves on the app they are given
 * (so all share these hooks and `bearer`).
 */
import type { Config } from "../config";
import type { Log } from "../log";
import { DomainError, InternalError, clientGone, countTokensBytesExceeded } from "../errors";
import { TakeTurns } from "../limits/turns";
import { serverStopping, type Drain } from "../limits/drain";
import type { AccountBudget } from "../limits/account-budget";
import type { RefusalPacer } from "../limits/refusal-pacer";
import { installChargeMetrics, requestMetrics, type ChargeSources } from "../metrics/request-metrics";
import { dialectForPath, errorBody, errorHeaders, publicError, statusOf } from "./errors";
import { RouteDocs } from "./route-docs";
import { readBodyCapped, tooLarge } from "./body";
import { admitBeforeBody, type KeyAuthDeps } from "./auth";
import { installRequestLifecycle, type RequestLifecycleDeps } from "./request-lifecycle";
import { contextOf, newRequestId } from "./request-context";
import { baseApp, type App } from "./route-module";
import { ROUTE_MODULES, type RouteDeps } from "./routes/index";

/**
 * What the app uses: its routes' services, and for its own hooks the body limit, the stop,
 * admission before a body is read, count_tokens' bytes in flight, the pacing of repeated
 * refusals, the request lifecycle and the metrics it defines.
 */
export type AppDeps = RouteDeps & KeyAuthDeps & RequestLifecycleDeps & ChargeSources & {
  config: Pick<Config, "maxBodyBytes">;
  drain: Drain;
  countTokensBytes: AccountBudget;
  refusalPacer: RefusalPacer;
  log: Log;
};

function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  const q = url.indexOf("?", start);
  return q < 0 ? url.slice(start) : url.slice(start, q);
}

/** Answered while the server is stopping (liveness and readiness). */
const PROBES = new Set(["/healthz", "/readyz"]);

/** Bodies above this (or of unknown length) take their account's turn to be read and parsed. */
export const LARGE_BODY_BYTES = 1024 * 1024;

export function createApp(s: AppDeps): { app: App; docs: RouteDocs } {
  const docs = new RouteDocs();
  const maxBody = s.config.maxBodyBytes;
  const bodyTurns = new TakeTurns();
  const app = baseApp()
    .onRequest(({ request, set }) => {
      set.headers["x-request-id"] = newRequestId();
      // Stopping: the listener stays open so probes see it, but only they are answered.
      if (s.drain.stopping && !PROBES.has(pathOf(request.url))) {
        set.headers.connection = "close";
        throw serverStopping();
      }
      const length = Number(request.headers.get("content-length") ?? 0);
      if (length > maxBody) {
        throw tooLarge(maxBody, length);
      }
    })
    .onParse(async ({ request, set }) => {
      const admitting = admitBeforeBody(s, request, pathOf(request.url), set as { headers: Record<string, unknown> });
      if (admitting) await admitting;
      // An account's large bodies are read and parsed one after another (see limits/turns.ts).
      const account = contextOf(request)?.caller?.accountId;
      const declared = request.headers.get("content-length");
      // count_tokens past the account's bytes in flight is refused before its body is read (the
      // route checks the text's own bytes again): a flood of large bodies costs no parsing.
      if (account && declared !== null && !s.countTokensBytes.fits(account, Number(declared)) && pathOf(request.url) === "/v1/messages/count_tokens") {
        throw countTokensBytesExceeded(s.countTokensBytes.cap, Number(declared));
      }
      const release = account && (declared === null || Number(declared) > LARGE_BODY_BYTES)
        ? await bodyTurns.take(account, request.signal).catch(() => {
            throw clientGone();
          })
        : null;
      try {
        const text = await readBodyCapped(request, maxBody);
        if (text.trim() === "") return null;
        try {
          return JSON.parse(text);
        } catch (e) {
          throw new DomainError("invalid_request", "invalid_json", `The request body is not valid JSON: ${(e as Error).message}.`);
        }
      } finally {
        release?.();
      }
    })
    // Destructured on purpose: Elysia fills only the context fields a hook's source names.
    .onError(({ code, error, request, set, route, body }) => {
      const path = pathOf(request.url);
      const requestId = String(set.headers["x-request-id"]);
      let err: DomainError;
      if (error instanceof DomainError && !(error instanceof InternalError)) err = error;
      // Elysia wraps whatever our parse hook throws (413, invalid JSON) in its ParseError.
      else if (code === "PARSE" && (error as Error).cause instanceof DomainError) err = (error as Error).cause as DomainError;
      else if (code === "NOT_FOUND") err = notFoundFor(path, request.method, docs);
      else if (code === "PARSE") err = new DomainError("invalid_request", "invalid_json", "The request body is not valid JSON.");
      else {
        const detail = error instanceof InternalError ? error.detail : String((error as Error)?.stack ?? error);
        s.log.error("unhandled error", { request_id: requestId, path, error: detail });
        err = publicError(error, requestId);
      }
      set.status = statusOf(err);
      Object.assign(set.headers, errorHeaders(err));
      set.headers["content-type"] = "application/json";
      const hc = { request, set, route, body };
      // Refused before its large body was read (a limit, a bad key): closing the connection stops
      // the upload, which the server would otherwise take in and drop, byte by byte.
      if (!request.bodyUsed && Number(request.headers.get("content-length") ?? 0) > LARGE_BODY_BYTES) {
        set.headers.connection = "close";
        // An account's limit refused it again within its Retry-After: answered after that wait.
        const account = set.status === 429 ? contextOf(request)?.authenticatedAccount : undefined;
        const holdMs = account === undefined ? 0 : s.refusalPacer.refused(account);
        if (holdMs > 0) return heldRefusal(request.signal, holdMs, () => s.refusalPacer.release(account!)).then(() => {
          endFailedRequest(hc, set.status as number);
          return errorBody(err, dialectForPath(path));
        });
      }
      // The error body is the whole response: the request ends here (slot, metrics, log line).
      endFailedRequest(hc, set.status);
      return errorBody(err, dialectForPath(path));
    });

  // The request metrics first, then those the ledger and limiter feed: /metrics lists them in that order.
  requestMetrics(s.metrics);
  installChargeMetrics(s);
  // Installed after the hooks above (the request id exists by then); the error hook calls it at request time.
  const endFailedRequest = installRequestLifecycle(app, s);
  for (const register of ROUTE_MODULES) register(app, s, docs);
  return { app, docs };
}

/** Waits `ms`, or until the client leaves, then gives the held place back. */
function heldRefusal(signal: AbortSignal, ms: number, release: () => void): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      release();
      resolve();
    };
    const timer = setTimeout(done, signal.aborted ? 0 : ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

function notFoundFor(path: string, method: string, docs: RouteDocs): DomainError {
  if (/\/chat\/completions\/.+/.test(path) || /^\/v1\/v1\//.test(path)) {
    return new DomainError("not_found", "not_found", `No endpoint at ${path}. The base address must end at /v1 (for example http://host:8080/v1); the client appends paths such as /chat/completions itself.`);
  }
  const methods = docs.methodsAt(path);
  if (methods.length > 0 && !methods.includes(method)) {
    return new DomainError("method_not_allowed", "method_not_allowed", `${method} is not allowed on ${path}; use ${methods.join(" or ")}.`, null, null, { allow: methods.join(", ") });
  }
  return new DomainError("not_found", "not_found", `No endpoint at ${method} ${path}. See /docs for the API reference.`);
}
