/**
 * `switchyard catalog|upstreams|routes ...`: models, prices, upstreams and routes managed live,
 * over the same operations as the admin API (catalog/live-admin.ts), against the store a server
 * reads them from (docs/operate.md, "Managing models, prices and routes live"). A running server picks a
 * change up within SWITCHYARD_LIVE_CONFIG_POLL_SECONDS (PostgreSQL: at once, by notification).
 * (`models pull|list` are the local model files, hence the name `catalog`.)
 */
import { LiveCatalogAdmin, type LiveCatalogDeps } from "../catalog/live-admin";
import { testRoute } from "../upstream/route-test";
import { invalidField, notFound } from "../errors";
import type { ParsedCommand } from "./command-line";

/** The key from standard input (`--key-stdin`), so it never sits in the shell's history or `ps`. */
async function keyFromStdin(options: Record<string, unknown>): Promise<string | undefined> {
  if (options["key-stdin"] !== true) return undefined;
  const text = await new Response(Bun.stdin.stream()).text();
  return text.trim();
}

/** An upstream's fields from its options, with the key read from standard input when asked. */
async function upstreamFields({ options, fields }: ParsedCommand): Promise<Record<string, unknown>> {
  const key = await keyFromStdin(options);
  return key === undefined ? fields : { ...fields, key };
}

export async function catalogCommand(s: LiveCatalogDeps, command: ParsedCommand): Promise<unknown> {
  const admin = new LiveCatalogAdmin(s);
  const { args, options, fields } = command;
  const [first = "", second = ""] = args;
  switch (command.name) {
    case "catalog list":
      return admin.listModels();
    case "catalog show":
      return admin.getModel(first);
    case "catalog add":
      return admin.createModel({ id: first, ...fields });
    case "catalog update":
      return admin.updateModel(first, fields);
    case "catalog disable":
      return admin.updateModel(first, { enabled: false });
    case "catalog enable":
      return admin.updateModel(first, { enabled: true });
    case "catalog remove":
      return admin.deleteModel(first);
    case "upstreams list":
      return admin.listUpstreams();
    case "upstreams add":
      return admin.createUpstream({ name: first, ...(await upstreamFields(command)) });
    case "upstreams update":
      return admin.updateUpstream(first, await upstreamFields(command));
    case "upstreams remove":
      return admin.deleteUpstream(first);
    case "routes list":
      return admin.listRoutes();
    case "routes add": {
      // Appends a route to the model's live routes (starting from the routes it has now).
      const now = (s.routes.configured?.() ?? []).find((c) => c.model === first)?.routes ?? [];
      return admin.setRoutes(first, [...now, { upstream: second, ...fields }]);
    }
    case "routes offline":
      return admin.setRoutes(first, []);
    case "routes remove":
      return admin.deleteRoutes(first);
    case "routes test": {
      const routes = s.routes.routesFor?.(first) ?? [];
      if (routes.length === 0) throw notFound(`No routes for '${first}'.`);
      const index = typeof options.route === "number" ? options.route : null;
      if (index !== null && (index < 0 || index >= routes.length)) throw invalidField("--route", `must be a route index from 0 to ${routes.length - 1}`);
      const picked = index === null ? routes.map((r, i) => [r, i] as const) : [[routes[index]!, index] as const];
      return { object: "route_test", model: first, results: await Promise.all(picked.map(([r, i]) => testRoute(r, i))) };
    }
    default:
      throw new Error(`command '${command.name}' has no handler`);
  }
}
