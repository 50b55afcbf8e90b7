import { describe, expect, test } from "bun:test";
import { DEFAULT_PRIORITY_HINT, DEFAULT_TIMEOUTS, parseRoutes, RoutesConfigError } from "./routes-config";

const good = {
  upstreams: {
    a: { base_url: "http://10.0.0.1:8000/v1/", api_key: "sk-a", timeouts: { connect_ms: 1000, first_byte_ms: 2000, idle_ms: 3000 } },
    b: { base_url: "https://b.example/v1", api_key_env: "B_KEY", priority_hint: null },
  },
  models: {
    "glm-4.6": [{ upstream: "a", model: "zai-org/GLM-4.6", weight: 3 }, { upstream: "b", priority: true }],
    "minimax-m2": [],
  },
  circuit_breaker: { failures: 2, cooldown_ms: 500 },
};

describe("parseRoutes", () => {
  test("a full document: defaults filled in, key read from the environment, trailing slash dropped", () => {
    const t = parseRoutes(JSON.stringify(good), { B_KEY: "sk-b" });
    expect(t.upstreams.get("a")).toEqual({ name: "a", baseUrl: "http://10.0.0.1:8000/v1", apiKey: "sk-a", connectTimeoutMs: 1000, firstByteTimeoutMs: 2000, idleTimeoutMs: 3000, priorityHint: DEFAULT_PRIORITY_HINT, keepAlive: true, proxy: null, tls: null });
    expect(t.upstreams.get("b")).toMatchObject({ apiKey: "sk-b", priorityHint: null, firstByteTimeoutMs: DEFAULT_TIMEOUTS.firstByteTimeoutMs });
    expect(t.models.get("glm-4.6")).toEqual([
      { upstream: "a", model: "zai-org/GLM-4.6", weight: 3, priority: false, pinned: false },
      { upstream: "b", model: "glm-4.6", weight: 1, priority: true, pinned: false },
    ]);
    expect(t.models.get("minimax-m2")).toEqual([]);
    expect(t.breaker).toEqual({ failures: 2, cooldownMs: 500 });
  });

  const bad: [string, unknown, RegExp][] = [
    ["not JSON", "{nope", /not valid JSON/],
    ["missing models", { upstreams: {} }, /models/],
    ["unknown field", { ...good, extra: 1 }, /./],
    ["route to an unknown upstream", { upstreams: { a: good.upstreams.a }, models: { x: [{ upstream: "zz" }] } }, /\/models\/x\/0\/upstream: no upstream named "zz"/],
    ["negative weight", { upstreams: { a: good.upstreams.a }, models: { x: [{ upstream: "a", weight: -1 }] } }, /weight/],
    ["non-http base url", { upstreams: { a: { base_url: "ftp://x/v1" } }, models: {} }, /base_url/],
    ["base url with /chat/completions", { upstreams: { a: { base_url: "http://x/v1/chat/completions" } }, models: {} }, /without \/chat\/completions/],
    ["base url with credentials", { upstreams: { a: { base_url: "http://user:hunter2@x/v1" } }, models: {} }, /must not carry a user name or password/],
    ["base url with a query", { upstreams: { a: { base_url: "http://x/v1?key=1" } }, models: {} }, /must not carry a query string/],
    ["zero timeout", { upstreams: { a: { base_url: "http://x/v1", timeouts: { idle_ms: 0 } } }, models: {} }, /idle_ms/],
    ["key variable not set", { upstreams: { a: { base_url: "http://x/v1", api_key_env: "NOPE_NOT_SET" } }, models: {} }, /NOPE_NOT_SET is not set/],
    // The environment's own prototype is no variable: never a key made of "function Object() {…}".
    ["key variable named like an object's own method", { upstreams: { a: { base_url: "http://x/v1", api_key_env: "constructor" } }, models: {} }, /constructor is not set/],
    ["key variable named toString", { upstreams: { a: { base_url: "http://x/v1", api_key_env: "toString" } }, models: {} }, /toString is not set/],
    ["a public id outside the id rule", { upstreams: { a: good.upstreams.a }, models: { "bad id <b>": [{ upstream: "a" }] } }, /\/models\/bad id <b>: is not a model id/],
    ["an upstream name outside its rule", { upstreams: { "x y": { base_url: "http://x/v1" } }, models: {} }, /\/upstreams\/x y: is not an upstream name/],
    ["an upstream-side model name with a control character", { upstreams: { a: good.upstreams.a }, models: { x: [{ upstream: "a", model: "m\r\nX: 1" }] } }, /\/models\/x\/0\/model/],
    ["an upstream-side model name over 256 characters", { upstreams: { a: good.upstreams.a }, models: { x: [{ upstream: "a", model: "m".repeat(257) }] } }, /\/models\/x\/0\/model/],
  ];
  test.each(bad)("%s → RoutesConfigError naming the place", (_name, doc, message) => {
    const text = typeof doc === "string" ? doc : JSON.stringify(doc);
    expect(() => parseRoutes(text, {})).toThrow(RoutesConfigError);
    expect(() => parseRoutes(text, {})).toThrow(message);
  });

  test("a base URL's password is never echoed", () => {
    expect(() => parseRoutes(JSON.stringify({ upstreams: { a: { base_url: "http://u:hunter2@x/v1" } }, models: {} }), {})).not.toThrow(/hunter2/);
  });

  test("errors never echo a key", () => {
    try {
      parseRoutes(JSON.stringify({ upstreams: { a: { base_url: "http://x/v1", api_key: "sk-very-secret", bogus: 1 } }, models: {} }), {});
      throw new Error("should have thrown");
    } catch (e) {
      expect(String((e as Error).message)).not.toContain("sk-very-secret");
    }
  });

  test("keys are trimmed: a trailing newline in api_key or the key's variable is not sent", () => {
    const doc = { upstreams: { a: { base_url: "http://x/v1", api_key: " sk-a\n" }, b: { base_url: "http://y/v1", api_key_env: "B_KEY" } }, models: {} };
    const t = parseRoutes(JSON.stringify(doc), { B_KEY: "sk-b\r\n" });
    expect(t.upstreams.get("a")!.apiKey).toBe("sk-a");
    expect(t.upstreams.get("b")!.apiKey).toBe("sk-b");
  });

  test.each([
    ["api_key with a LF inside", { api_key: "sk-sec\nret" }, {}, /\/upstreams\/a\/api_key: must not contain control characters/],
    ["api_key with a NUL", { api_key: "sk-sec\u0000ret" }, {}, /\/upstreams\/a\/api_key: must not contain control characters/],
    ["api_key of whitespace only", { api_key: " \n" }, {}, /\/upstreams\/a\/api_key: must not be empty/],
    ["a key variable with a CR inside", { api_key_env: "A_KEY" }, { A_KEY: "sk-sec\rret" }, /\/upstreams\/a\/api_key_env: environment variable A_KEY: must not contain control characters/],
  ])("%s → RoutesConfigError naming the field and the rule, never the key", (_name, fields, env, message) => {
    const text = JSON.stringify({ upstreams: { a: { base_url: "http://x/v1", ...fields } }, models: {} });
    expect(() => parseRoutes(text, env)).toThrow(message);
    expect(() => parseRoutes(text, env)).not.toThrow(/sec/);
  });

  test("keep_alive: the route's field, else the default passed in (SWITCHYARD_UPSTREAM_KEEP_ALIVE)", () => {
    const doc = { upstreams: { on: { base_url: "http://x/v1", keep_alive: true }, off: { base_url: "http://y/v1", keep_alive: false }, unset: { base_url: "http://z/v1" } }, models: {} };
    const text = JSON.stringify(doc);
    const byDefault = parseRoutes(text, {});
    expect([byDefault.upstreams.get("on")!.keepAlive, byDefault.upstreams.get("off")!.keepAlive, byDefault.upstreams.get("unset")!.keepAlive]).toEqual([true, false, true]);
    const defaultOff = parseRoutes(text, {}, { keepAlive: false });
    expect([defaultOff.upstreams.get("on")!.keepAlive, defaultOff.upstreams.get("off")!.keepAlive, defaultOff.upstreams.get("unset")!.keepAlive]).toEqual([true, false, false]);
    expect(() => parseRoutes(JSON.stringify({ upstreams: { a: { base_url: "http://x/v1", keep_alive: "no" } }, models: {} }), {})).toThrow(/keep_alive/);
  });
});

test("a live upstream's api_key_env must start with the given prefix; the file's may name any variable", () => {
  const doc = (v: string) => JSON.stringify({ upstreams: { a: { base_url: "http://x/v1", api_key_env: v } }, models: {} });
  const env = { AWS_SECRET_ACCESS_KEY: "aws", SWITCHYARD_UPSTREAM_KEY_A: "sk-a" };
  const live = { keepAlive: true, keyEnvPrefix: "SWITCHYARD_UPSTREAM_KEY_" };
  expect(() => parseRoutes(doc("AWS_SECRET_ACCESS_KEY"), env, live)).toThrow("/upstreams/a/api_key_env: must name a variable starting with SWITCHYARD_UPSTREAM_KEY_");
  expect(() => parseRoutes(doc("AWS_SECRET_ACCESS_KEY"), env, live)).not.toThrow(/aws$/);
  expect(parseRoutes(doc("SWITCHYARD_UPSTREAM_KEY_A"), env, live).upstreams.get("a")!.apiKey).toBe("sk-a");
  expect(parseRoutes(doc("AWS_SECRET_ACCESS_KEY"), env).upstreams.get("a")!.apiKey).toBe("aws");
});
