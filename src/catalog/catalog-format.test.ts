/**
 * The catalog format (README, "The model catalog"): a mistake names the entry and the field and
 * says what to write; a chat model without a context window is refused (no silent default);
 * engine-style ids (slashes, capitals, colons) are accepted; the optional fields take their
 * documented defaults.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Catalog, CatalogError } from "./catalog";
import { parseCatalog } from "./catalog-format";

const entry = (over: Record<string, unknown> = {}) => ({
  id: "my-llama", kind: "chat", owned_by: "meta", context_window: 8192,
  pricing: { input_per_million: "0.20", output_per_million: "0.60" }, ...over,
});
const without = (field: string) => {
  const e: Record<string, unknown> = entry();
  delete e[field];
  return e;
};
const errorOf = (models: unknown[]) => {
  try {
    parseCatalog({ models: [entry({ id: "first" }), entry({ id: "second" }), entry({ id: "third" }), ...models] }, "SWITCHYARD_CATALOG");
  } catch (e) {
    expect(e).toBeInstanceOf(CatalogError);
    return (e as Error).message;
  }
  throw new Error("accepted");
};

test.each([
  [without("owned_by"), 'SWITCHYARD_CATALOG: models[3].owned_by is missing: write the lab that built the model, e.g. "owned_by": "meta"'],
  [without("context_window"), 'SWITCHYARD_CATALOG: models[3].context_window is missing: write the model\'s context length in tokens (vLLM\'s --max-model-len), e.g. "context_window": 131072'],
  [without("pricing"), "SWITCHYARD_CATALOG: models[3].pricing is missing: write USD per million tokens as strings"],
  [entry({ context_length: 8192 }), "SWITCHYARD_CATALOG: models[3].context_length is not a catalog field: an entry has id, kind, owned_by"],
  // Names an object has of its own prototype are no catalog fields either (not "is not valid: function Object()…").
  [entry({ constructor: 1 }), "SWITCHYARD_CATALOG: models[3].constructor is not a catalog field: an entry has id, kind, owned_by"],
  [entry({ toString: 1 }), "SWITCHYARD_CATALOG: models[3].toString is not a catalog field: an entry has id, kind, owned_by"],
  [entry({ pricing: { input_per_million: 0.2 } }), "SWITCHYARD_CATALOG: models[3].pricing.input_per_million is not valid"],
  [entry({ kind: "llm" }), 'SWITCHYARD_CATALOG: models[3].kind is not valid'],
  [entry({ id: "my llama" }), "SWITCHYARD_CATALOG: models[3].id is not valid"],
] as const)("%j is refused with a line saying what to write", (bad, message) => {
  expect(errorOf([bad])).toStartWith(message);
});

test("cache prices are catalog fields: a cached-input and a cache-write price load as units, absent ones stay absent", () => {
  const catalog = new Catalog(JSON.stringify({ models: [
    entry({ id: "cached", pricing: { input_per_million: "1.00", output_per_million: "2.00", cached_input_per_million: "0.10", cache_write_per_million: "1.25" } }),
    entry({ id: "plain" }),
  ] }));
  expect(catalog.get("cached")!.prices).toEqual({ inputPerMillion: 1_000_000_000, outputPerMillion: 2_000_000_000, charactersPerMillion: 0, cachedInputPerMillion: 100_000_000, cacheWritePerMillion: 1_250_000_000 });
  expect(catalog.get("plain")!.prices).toEqual({ inputPerMillion: 200_000_000, outputPerMillion: 600_000_000, charactersPerMillion: 0 });
});

test("a bad cache price is refused naming the field and the rule", () => {
  expect(errorOf([entry({ pricing: { input_per_million: "1", cached_input_per_million: 0.1 } })])).toStartWith(
    'SWITCHYARD_CATALOG: models[3].pricing.cached_input_per_million is not valid (expected string): write USD per million as a decimal string with at most 9 decimals, e.g. "0.20" (must be at most 10000 USD per million) (what a prompt token read',
  );
  expect(errorOf([entry({ pricing: { input_per_million: "1", cache_write_per_million: "1.2345678901" } })])).toStartWith(
    "SWITCHYARD_CATALOG: models[3].pricing.cache_write_per_million is not valid: write USD per million",
  );
});

test("a speech model needs no context window", () => {
  expect(parseCatalog({ models: [entry({ id: "voice", kind: "speech", context_window: undefined, pricing: { characters_per_million: "15" } })] }, "x")).toHaveLength(1);
});

test("engine-style ids are valid catalog ids: slashes, capitals, colons", () => {
  const ids = ["Qwen/Qwen3-8B", "llama3.2:3b", "meta-llama/Llama-3.1-8B-Instruct", "my_model@v2"];
  expect(parseCatalog({ models: ids.map((id) => entry({ id })) }, "x").map((e) => e.id)).toEqual(ids);
});

test("an override entry takes the documented defaults: created 0, turbo false, text input", () => {
  const catalog = new Catalog(JSON.stringify({ models: [entry({ id: "Qwen/Qwen3-8B" })] }));
  expect(catalog.get("Qwen/Qwen3-8B")).toMatchObject({ created: 0, turbo: false, inputModalities: ["text"], contextWindow: 8192, prices: { inputPerMillion: 200_000_000, outputPerMillion: 600_000_000 } });
  expect(catalog.resolve("Qwen/Qwen3-8B")?.entry.id).toBe("Qwen/Qwen3-8B");
  // The embedded catalog is still there (no "replace").
  expect(catalog.get("glm-4.6")).toBeDefined();
});

test('"replace": true leaves only the override\'s models', () => {
  const catalog = new Catalog(JSON.stringify({ replace: true, models: [entry()] }));
  expect(catalog.all().map((e) => e.id)).toEqual(["my-llama"]);
});

test("a bad override stops start-up with that line", () => {
  expect(() => new Catalog(JSON.stringify({ models: [without("owned_by")] }))).toThrow('SWITCHYARD_CATALOG: models[0].owned_by is missing: write the lab that built the model, e.g. "owned_by": "meta"');
});

test("the README's example catalog is valid, and means what the README says", () => {
  const readme = readFileSync(join(import.meta.dir, "../../README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## The model catalog"));
  const json = section.slice(section.indexOf("```json") + 7, section.indexOf("```", section.indexOf("```json") + 7));
  const catalog = new Catalog(json);
  expect(catalog.get("my-llama")).toMatchObject({ ownedBy: "meta", contextWindow: 131072, maxOutputTokens: 8192, turbo: true, inputModalities: ["text", "image"] });
  expect(catalog.resolve("my-llama-turbo")?.tier).toBe("priority");
  expect(catalog.get("glm-4.6")).toBeUndefined();
  expect(catalog.get("kimi-k2-instruct")).toBeDefined();
});

// Every value of an entry reaches the unauthenticated GET /v1/models: each has a documented range.
test.each([
  [entry({ owned_by: "x".repeat(10 * 1024 * 1024) }), "models[3].owned_by is not valid"],
  [entry({ owned_by: "Meta\u0000" }), "models[3].owned_by is not valid"],
  [entry({ owned_by: "Meta\r\nX-Injected: 1" }), "models[3].owned_by is not valid"],
  [entry({ owned_by: "<script>alert(1)</script>" }), "models[3].owned_by is not valid"],
  [entry({ owned_by: "Meta\u202egnp.exe" }), "models[3].owned_by is not valid"],
  [entry({ owned_by: "   " }), "models[3].owned_by is not valid"],
  [entry({ created: 1e300 }), "models[3].created is not valid"],
  [entry({ created: 4_102_444_801 }), "models[3].created is not valid"],
  [entry({ context_window: 1e20 }), "models[3].context_window is not valid"],
  [entry({ context_window: 100_000_001 }), "models[3].context_window is not valid"],
  [entry({ kind: "embedding", dimensions: 1e9 }), "models[3].dimensions is not valid"],
  [entry({ pricing: { input_per_million: "10000.000000001", output_per_million: "1" } }), "models[3].pricing.input_per_million is not valid"],
  [entry({ pricing: { input_per_million: "1", output_per_million: "99999999999999999999999" } }), "models[3].pricing.output_per_million is not valid"],
] as const)("an out-of-range value is refused naming the field: %#", (bad, message) => {
  const line = errorOf([bad]);
  expect(line).toStartWith(`SWITCHYARD_CATALOG: ${message}`);
  // One short line, whatever the value held.
  expect(line.length).toBeLessThan(400);
  expect(line).not.toContain("\n");
});

test("values at the edges of the ranges are accepted", () => {
  const [e] = parseCatalog({ models: [entry({ owned_by: "Alibaba (Qwen) & Co. / Zhipu-AI 智谱", created: 4_102_444_800, context_window: 100_000_000, pricing: { input_per_million: "10000", output_per_million: "0" } })] }, "x");
  expect(e!.owned_by).toBe("Alibaba (Qwen) & Co. / Zhipu-AI 智谱");
});
