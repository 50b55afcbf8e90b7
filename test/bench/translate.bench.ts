/**
 * Protocol translation benchmark: what the Messages and Responses endpoints add per streamed
 * chunk (translate + SSE-encode) on top of the chat relay, and the cost of translating a long
 * request. Pure CPU, no sockets: figures are this machine's per-chunk overhead.
 *
 *   ./node_modules/.bin/bun test/bench/translate.bench.ts [chunks=200000]
 */
import { AnthropicStreamTranslator } from "../../src/protocols/anthropic/stream";
import { ResponsesStreamTranslator } from "../../src/protocols/responses/stream";
import { parseMessagesRequest, toChatRequest as messagesToChat } from "../../src/protocols/anthropic/request";
import { normalizeInput, parseResponsesRequest, toChatRequest as responsesToChat } from "../../src/protocols/responses/request";
import { sseData, sseEvent } from "../../src/protocols/sse";

const CHUNKS = Number(process.argv[2] ?? 200_000);
const result = { inputTokens: 10, outputTokens: CHUNKS, charged: 1, serviceTier: "default" as const };
const chunk = (content: string) => ({ id: "chatcmpl-x", object: "chat.completion.chunk", created: 1, model: "glm-4.6", choices: [{ index: 0, delta: { content }, finish_reason: null }] });

function bench(name: string, fn: () => number): void {
  fn(); // warm-up
  const t0 = performance.now();
  const bytes = fn();
  const ms = performance.now() - t0;
  console.log(`${name.padEnd(44)} ${(CHUNKS / (ms / 1000) / 1e6).toFixed(2)} M chunks/s  ${((ms * 1e6) / CHUNKS).toFixed(0)} ns/chunk  ${(bytes / CHUNKS).toFixed(0)} B/chunk out`);
}

bench("chat relay baseline (sseData only)", () => {
  let bytes = 0;
  for (let i = 0; i < CHUNKS; i++) bytes += sseData(chunk(" tok")).length;
  return bytes;
});

bench("messages: translate + sseEvent", () => {
  let n = 0;
  const t = new AnthropicStreamTranslator({ id: "msg_1", model: "glm-4.6", inputTokens: 10, toolId: () => `toolu_${++n}` });
  let bytes = 0;
  for (const e of t.start()) bytes += sseEvent(e.event, e.data).length;
  for (let i = 0; i < CHUNKS; i++) for (const e of t.push(chunk(" tok"))) bytes += sseEvent(e.event, e.data).length;
  for (const e of t.finish(result)) bytes += sseEvent(e.event, e.data).length;
  return bytes;
});

bench("responses: translate + sseEvent", () => {
  let n = 0;
  const shell = { id: "resp_1", createdAt: 1, model: "glm-4.6", serviceTier: "default" as const, request: parseResponsesRequest({ model: "glm-4.6", input: "x" }) };
  const t = new ResponsesStreamTranslator(shell, (p) => `${p}_${++n}`);
  let bytes = 0;
  for (const e of t.start()) bytes += sseEvent(e.event, e.data).length;
  for (let i = 0; i < CHUNKS; i++) for (const e of t.push(chunk(" tok"))) bytes += sseEvent(e.event, e.data).length;
  for (const e of t.finish(result).events) bytes += sseEvent(e.event, e.data).length;
  return bytes;
});

// A long agent conversation: 200 turns, each a tool call and its result.
const TURNS = 200;
const anthropicBody = {
  model: "glm-4.6", max_tokens: 1024, system: "You are an agent.",
  tools: [{ name: "run", description: "Run a command", input_schema: { type: "object", properties: { cmd: { type: "string" } } } }],
  messages: Array.from({ length: TURNS }, (_, i) => [
    { role: "assistant", content: [{ type: "text", text: `Step ${i}` }, { type: "tool_use", id: `toolu_${i}`, name: "run", input: { cmd: `ls ${i}` } }] },
    { role: "user", content: [{ type: "tool_result", tool_use_id: `toolu_${i}`, content: "file-a\nfile-b\n".repeat(20) }] },
  ]).flat(),
};
anthropicBody.messages.unshift({ role: "user", content: [{ type: "text", text: "Start." }] } as never);
const responsesBody = {
  model: "glm-4.6", instructions: "You are an agent.",
  input: [{ role: "user", content: "Start." }, ...Array.from({ length: TURNS }, (_, i) => [
    { type: "function_call", call_id: `call_${i}`, name: "run", arguments: `{"cmd":"ls ${i}"}` },
    { type: "function_call_output", call_id: `call_${i}`, output: "file-a\nfile-b\n".repeat(20) },
  ]).flat()],
};

for (const [name, fn] of [
  ["messages request, 401 messages", () => messagesToChat(parseMessagesRequest(structuredClone(anthropicBody)))],
  ["responses request, 401 items", () => { const r = parseResponsesRequest(structuredClone(responsesBody)); return responsesToChat(r, [], normalizeInput(r.input, (p) => p)); }],
] as const) {
  const runs = 200;
  fn();
  const t0 = performance.now();
  for (let i = 0; i < runs; i++) fn();
  console.log(`${name.padEnd(44)} ${((performance.now() - t0) / runs).toFixed(3)} ms/request`);
}
