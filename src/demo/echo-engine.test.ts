import { afterAll, expect, test } from "bun:test";
import { DEMO_MODEL, startEchoEngine } from "./echo-engine";

const engine = startEchoEngine();
afterAll(() => engine.stop());

const post = (body: unknown) =>
  fetch(engine.url + "/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: typeof body === "string" ? body : JSON.stringify(body) });

test("lists one model", async () => {
  const body = (await (await fetch(engine.url + "/models")).json()) as any;
  expect(body.data.map((m: { id: string }) => m.id)).toEqual([DEMO_MODEL]);
});

test("answers with the last user message, with usage", async () => {
  const res = await post({ model: DEMO_MODEL, messages: [{ role: "user", content: "first" }, { role: "assistant", content: "x" }, { role: "user", content: [{ type: "text", text: "second one" }] }] });
  const body = (await res.json()) as any;
  expect(body.choices[0].message.content).toBe("second one");
  expect(body.choices[0].finish_reason).toBe("stop");
  expect(body.usage.completion_tokens).toBe(3);
  expect(body.usage.total_tokens).toBe(body.usage.prompt_tokens + 3);
});

test("streams the echo in several deltas, usage last when asked", async () => {
  const res = await post({ model: DEMO_MODEL, stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: "hello there, engine" }] });
  expect(res.headers.get("content-type")).toBe("text/event-stream");
  const lines = (await res.text()).split("\n\n").filter(Boolean);
  expect(lines.at(-1)).toBe("data: [DONE]");
  const events = lines.slice(0, -1).map((l) => JSON.parse(l.slice("data: ".length)));
  expect(events.map((e) => e.choices[0]?.delta?.content ?? "").join("")).toBe("hello there, engine");
  expect(events.filter((e) => e.choices[0]?.delta?.content).length).toBeGreaterThan(1);
  expect(events.at(-1).usage.completion_tokens).toBe(5);
});

test("max_tokens cuts the echo with finish length", async () => {
  const body = (await (await post({ model: DEMO_MODEL, max_tokens: 2, messages: [{ role: "user", content: "abcdefghijkl" }] })).json()) as any;
  expect(body.choices[0].message.content).toBe("abcdefgh");
  expect(body.choices[0].finish_reason).toBe("length");
});

test("a body that is not JSON or has no messages is a 400 naming it", async () => {
  const bad = await post("{");
  expect(bad.status).toBe(400);
  expect(((await bad.json()) as any).error.message).toContain("body");
  const none = await post({ model: DEMO_MODEL });
  expect(none.status).toBe(400);
  expect(((await none.json()) as any).error.param).toBe("messages");
});
