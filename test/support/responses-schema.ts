/**
 * The OpenAI Responses API as a JSON schema, derived at test time from the pinned `openai`
 * package's TypeScript types (which OpenAI generates from its OpenAPI document) with
 * ts-json-schema-generator, then compiled with ajv. No spec file is copied into this repo: the
 * schema follows whatever `openai` version package.json pins. Extra properties are allowed
 * (Switchyard adds `usage.cost`); every declared field must have its declared type.
 *
 * One correction to the types: `usage` is declared optional but never null, while the API sends
 * `"usage": null` in response.created / .in_progress (and the Open Responses spec requires the
 * key, nullable). The generated schema is widened to accept exactly that null, nothing else.
 */
import { dirname, join } from "node:path";
import { createRequire } from "node:module";
import Ajv, { type ValidateFunction } from "ajv";
import { createGenerator } from "ts-json-schema-generator";

export interface SchemaCheck {
  /** Problems of a Response object (empty when valid). */
  response(body: unknown): string[];
  /** Problems of one stream event (a ResponseStreamEvent), by its `type`. */
  event(event: unknown): string[];
}

let cached: Promise<SchemaCheck> | null = null;

/** `Response.usage`: ResponseUsage or null (see the note above). */
function allowNullUsage<T>(schema: T): T {
  const defs = (schema as { definitions?: Record<string, { properties?: Record<string, unknown> }> }).definitions ?? {};
  const root = schema as { properties?: Record<string, unknown> };
  for (const target of [defs.Response, root]) {
    const usage = target?.properties?.usage;
    if (usage) target.properties!.usage = { anyOf: [usage, { type: "null" }] };
  }
  return schema;
}

function describe(v: ValidateFunction): string[] {
  return (v.errors ?? []).slice(0, 8).map((e) => `${e.instancePath || "/"} ${e.message ?? ""} ${JSON.stringify(e.params)}`);
}

async function build(): Promise<SchemaCheck> {
  const require = createRequire(import.meta.url);
  const path = join(dirname(require.resolve("openai/package.json")), "resources/responses/responses.d.ts");
  const generator = createGenerator({ path, type: "*", skipTypeCheck: true, expose: "export", topRef: false, additionalProperties: true });
  const ajv = new Ajv({ strict: false, allErrors: false });
  const response = ajv.compile(allowNullUsage(generator.createSchema("Response")));
  const eventSchema = allowNullUsage(generator.createSchema("ResponseStreamEvent")) as { definitions?: Record<string, unknown>; anyOf?: { $ref: string }[] };
  // One validator per event type, so a failure names the event's own rule instead of 50 union branches.
  const byType = new Map<string, ValidateFunction>();
  for (const branch of eventSchema.anyOf ?? []) {
    const name = decodeURIComponent(branch.$ref.replace("#/definitions/", ""));
    const def = eventSchema.definitions?.[name] as { properties?: { type?: { const?: string; enum?: string[] } } } | undefined;
    const type = def?.properties?.type?.const ?? def?.properties?.type?.enum?.[0];
    if (type) byType.set(type, ajv.compile({ ...eventSchema, anyOf: undefined, $ref: branch.$ref }));
  }
  return {
    response: (body) => (response(body) ? [] : describe(response)),
    event(event) {
      const type = (event as { type?: unknown })?.type;
      const v = typeof type === "string" ? byType.get(type) : undefined;
      if (!v) return [`no event type ${JSON.stringify(type)} in the OpenAI Responses stream events`];
      return v(event) ? [] : describe(v).map((d) => `${String(type)}: ${d}`);
    },
  };
}

/** Built once per test process (a few seconds: it reads the openai package's types). */
export function responsesSchema(): Promise<SchemaCheck> {
  return (cached ??= build());
}
