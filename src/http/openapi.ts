/**
 * The OpenAPI document, built from the route table: TypeBox schemas are JSON Schema already,
 * so request bodies are documented by the very schemas that validate them.
 */
import type { RouteDocs } from "./route-docs";
import { SERVICE_NAME, VERSION } from "../version";

const errorSchema = {
  type: "object",
  properties: {
    error: {
      type: "object",
      properties: { message: { type: "string" }, type: { type: "string" }, param: { type: ["string", "null"] }, code: { type: ["string", "null"] } },
    },
  },
};

export function buildOpenApi(docs: RouteDocs) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of docs.routes) {
    const path = r.path.replace(/:([a-zA-Z_]+)/g, "{$1}");
    const params = [...r.path.matchAll(/:([a-zA-Z_]+)/g)].map((m) => ({ name: m[1], in: "path", required: true, schema: { type: "string" } }));
    paths[path] ??= {};
    paths[path][r.method.toLowerCase()] = {
      summary: r.summary,
      ...(params.length ? { parameters: params } : {}),
      ...(r.auth === "none" ? { security: [] } : r.auth === "admin" ? { security: [{ admin: [] }] } : {}),
      ...(r.body ? { requestBody: { required: true, content: { "application/json": { schema: stripSymbols(r.body) } } } } : {}),
      responses: {
        "200": { description: "Success", content: { [r.produces ?? "application/json"]: {} } },
        default: { description: "Error", content: { "application/json": { schema: errorSchema } } },
      },
    };
  }
  return {
    openapi: "3.1.0",
    info: { title: SERVICE_NAME, version: VERSION, description: "OpenAI-compatible inference API: chat, speech and embeddings behind one key and one prepaid balance." },
    servers: [{ url: "/" }],
    components: {
      securitySchemes: {
        apiKey: { type: "http", scheme: "bearer" },
        // Anthropic's clients send the key this way; every endpoint that takes a key reads it.
        apiKeyHeader: { type: "apiKey", in: "header", name: "x-api-key" },
        admin: { type: "http", scheme: "bearer" },
      },
    },
    security: [{ apiKey: [] }, { apiKeyHeader: [] }],
    paths,
  };
}

/** TypeBox marks schemas with symbol keys; JSON.stringify drops them, this makes a plain copy. */
function stripSymbols(schema: unknown): unknown {
  return JSON.parse(JSON.stringify(schema));
}

const esc = (t: string) => t.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

export function renderDocsPage(docs: RouteDocs): string {
  const rows = docs.routes
    .map((r) => `<tr><td><code>${r.method}</code></td><td><code>${esc(r.path)}</code></td><td>${r.auth === "none" ? "none" : r.auth === "admin" ? "admin token" : "API key"}</td><td>${esc(r.summary)}</td></tr>`)
    .join("\n");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${SERVICE_NAME} API reference</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.4rem .6rem;text-align:left;vertical-align:top}
code{background:#f4f4f4;padding:0 .25rem;border-radius:3px}</style></head>
<body><h1>${SERVICE_NAME} ${VERSION}</h1>
<p>An OpenAI-compatible API. Point any OpenAI client at <code>http://&lt;host&gt;:&lt;port&gt;/v1</code>
with your API key; Anthropic clients (which add <code>/v1/messages</code> themselves) take
<code>http://&lt;host&gt;:&lt;port&gt;</code>. Errors use the OpenAI shape
<code>{"error":{"message","type","param","code"}}</code> (Anthropic's shape on <code>/v1/messages</code>).
The machine-readable description is <a href="/docs/openapi.json">/docs/openapi.json</a>.</p>
<table><thead><tr><th>Method</th><th>Path</th><th>Auth</th><th>What it does</th></tr></thead><tbody>
${rows}
</tbody></table></body></html>`;
}
