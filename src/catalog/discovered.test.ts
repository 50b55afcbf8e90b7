/**
 * Models discovered from upstreams (README, "Serve your own model") never shadow the catalog: an
 * upstream listing a catalog id, a catalog model's turbo id or a local model's id (turbo or not)
 * changes nothing, each id appears once, and ids outside the id rule are never offered.
 */
import { expect, test } from "bun:test";
import { Catalog } from "./catalog";
import type { OfferedModel } from "./discovered";

const offer = (...ids: string[]): OfferedModel[] => ids.map((id) => ({ id, ownedBy: "up", created: null, maxModelLen: null }));

function catalogOffering(models: OfferedModel[], override: string | null = null) {
  let version = 1;
  let current = models;
  const catalog = new Catalog(override, { version: () => String(version), models: () => current }, { defaultPrice: { input: "0.2", output: "0.6" }, defaultContextWindow: 32768 });
  return { catalog, serve: (next: OfferedModel[]) => ((current = next), version++) };
}

test("a catalog id, a turbo id or a local model's id from an upstream is never a discovered model", () => {
  const { catalog } = catalogOffering(offer("glm-4.6", "glm-4.6-turbo", "voice-82m", "voice-82m-turbo", "embedding-300m", "embedding-300m-turbo", "my-llama"));
  const ids = catalog.all().map((e) => e.id);
  expect(new Set(ids).size).toBe(ids.length);
  expect(catalog.all().filter((e) => e.discovered).map((e) => e.id)).toEqual(["my-llama"]);
  // The catalog's answers stand: the turbo tier at the catalog's price, speech for the voice model.
  const turbo = catalog.resolve("glm-4.6-turbo")!;
  expect(turbo).toMatchObject({ tier: "priority", entry: { id: "glm-4.6", kind: "chat" } });
  expect(turbo.entry.discovered).toBeUndefined();
  expect(catalog.resolve("voice-82m-turbo")).toMatchObject({ tier: "priority", entry: { id: "voice-82m", kind: "speech" } });
  expect(catalog.resolve("embedding-300m")!.entry.kind).toBe("embedding");
});

test("a disabled catalog entry stays removed, and local ids stay reserved when a catalog replaces the embedded one", () => {
  const override = JSON.stringify({
    replace: true,
    models: [{ id: "glm-4.6", kind: "chat", owned_by: "Z.ai", context_window: 1000, pricing: {}, enabled: false }],
  });
  const { catalog } = catalogOffering(offer("glm-4.6", "voice-82m", "voice-82m-turbo", "embedding-300m", "kimi-k2-instruct"), override);
  expect(catalog.all().map((e) => e.id)).toEqual(["kimi-k2-instruct"]);
});

test("ids outside the documented characters are never offered", () => {
  const bad = ["has space", "<img src=x onerror=alert(1)>", "../../etc/passwd", "evil\u202etxt.exe", "-leading-dash", "x".repeat(257), "tab\there"];
  const { catalog } = catalogOffering(offer(...bad, "Qwen/Qwen3-8B", "llama3.2:3b"));
  expect(catalog.all().filter((e) => e.discovered).map((e) => e.id)).toEqual(["Qwen/Qwen3-8B", "llama3.2:3b"]);
  for (const id of bad) expect(catalog.resolve(id)).toBeNull();
});

test("the version moves when the offered models change, and only then", () => {
  const { catalog, serve } = catalogOffering(offer("a-model"));
  const v = catalog.version();
  expect(catalog.version()).toBe(v);
  serve(offer("a-model", "b-model"));
  expect(catalog.version()).not.toBe(v);
  expect(catalog.get("b-model")?.discovered).toBe(true);
});
